"""The door to the cluster: kubectl as a child process (kubectl.py, the only module that
starts one, through sh; verbs.py, the arguments of each kubectl verb), the connection, the
cached kubeconfig view, the commands printed for the user, and the reading of what kubectl
and the API answer.
"""
