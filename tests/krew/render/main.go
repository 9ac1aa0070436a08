// Command render-krew-template renders a krew-release-bot `.krew.yaml` template for one tag,
// the way the bot does on a release, but offline: the release's assets are read from a local
// directory instead of downloaded.
//
//	render-krew-template -template .krew.yaml -tag v0.1.0 -assets dist/
//
// The bot (github.com/rajatjindal/krew-release-bot, pkg/source/template.go, not served by
// the Go module proxy) parses the file with text/template and executes it with its release
// request, whose TagName is the tag, and these functions:
//
//   - addURIAndSha URL TAG: URL is itself a template, executed with TagName (TAG) and
//     Version (TAG's first dotted number); the result is "uri: URL\n    sha256: HEX", HEX
//     being the sha256 of the downloaded asset: here, of the file of URL's last path
//     element in -assets.
//   - indent N TEXT: TEXT with every line after the first indented by N spaces (and a
//     "    sha256:" of addURIAndSha's moved to that indentation), trimmed.
//
// The rendered manifest goes to stdout; any error exits 1 with the reason.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

type values struct {
	TagName string
}

type urlValues struct {
	TagName string
	Version string
}

var versionInTag = regexp.MustCompile(`\d+(\.\d+)+`)

func versionOf(tag string) string {
	if found := versionInTag.FindString(tag); found != "" {
		return found
	}
	return tag
}

func main() {
	templateFile := flag.String("template", ".krew.yaml", "the .krew.yaml template")
	tag := flag.String("tag", "", "the release's tag, e.g. v0.1.0")
	assets := flag.String("assets", "", "directory holding the release's assets")
	flag.Parse()
	if *tag == "" || *assets == "" {
		fmt.Fprintln(os.Stderr, "render-krew-template: -tag and -assets are required")
		os.Exit(2)
	}
	out, err := render(*templateFile, *tag, *assets)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render-krew-template: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

func render(templateFile, tag, assets string) ([]byte, error) {
	var failure error
	addURIAndSha := func(url, tag string) string {
		var expanded bytes.Buffer
		inner, err := template.New("url").Parse(url)
		if err == nil {
			err = inner.Execute(&expanded, urlValues{TagName: tag, Version: versionOf(tag)})
		}
		if err != nil {
			failure = fmt.Errorf("addURIAndSha %q: %w", url, err)
			return ""
		}
		uri := expanded.String()
		data, err := os.ReadFile(filepath.Join(assets, path.Base(uri)))
		if err != nil {
			failure = fmt.Errorf("addURIAndSha: no asset for %s: %w", uri, err)
			return ""
		}
		sum := sha256.Sum256(data)
		return fmt.Sprintf("uri: %s\n    sha256: %s", uri, hex.EncodeToString(sum[:]))
	}
	indent := func(spaces int, text string) string {
		text = strings.ReplaceAll(text, "    sha256:", "sha256:")
		pad := strings.Repeat(" ", spaces)
		return strings.TrimSpace(pad + strings.ReplaceAll(text, "\n", "\n"+pad))
	}
	parsed, err := template.New(filepath.Base(templateFile)).Funcs(template.FuncMap{
		"addURIAndSha": addURIAndSha,
		"indent":       indent,
	}).ParseFiles(templateFile)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := parsed.Execute(&out, values{TagName: tag}); err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, failure
	}
	return out.Bytes(), nil
}
