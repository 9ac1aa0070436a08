// Renders a krew-release-bot .krew.yaml template with Go's text/template, the engine the
// bot uses (tests/krew/build.py builds it; the standard library only).
module kubectl-squarepeg.local/krew/render

go 1.22
