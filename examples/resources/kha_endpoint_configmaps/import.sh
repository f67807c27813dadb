# host, host:port or host:port:/path/to/admin.conf of a control-plane node. The
# ConfigMaps' current values become the resource's, and the values destroy puts back.
terraform import kha_endpoint_configmaps.cluster 10.0.0.11:22:/etc/kubernetes/admin.conf
