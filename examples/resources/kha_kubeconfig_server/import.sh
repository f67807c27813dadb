# host:port:path, several paths separated by commas. The kubeconfigs' current servers
# become the resource's server and the values destroy puts back.
terraform import 'kha_kubeconfig_server.worker["w1"]' 10.0.0.21:22:/etc/kubernetes/kubelet.conf
