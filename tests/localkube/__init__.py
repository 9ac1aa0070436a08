"""localkube: a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler built from the Go module proxy) with a node agent, for the e2e tests."""
