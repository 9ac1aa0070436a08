"""kubesim: a Kubernetes API server and cluster simulator that the real kubectl talks to.

`store`, `selectors`, `logbook` and `scenario` are shared by the API half (`server` and the
modules it uses) and the cluster half (`cluster`: scheduler, kubelet, controllers). See
README.md in this directory.
"""
