//go:build tools

// Package tools pins the command this module builds: kubectl of localkube's release, from
// the same kubernetes module (and published staging modules) as the control plane.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
