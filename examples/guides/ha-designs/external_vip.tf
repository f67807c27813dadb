# An external HAProxy pair holding a VIP with keepalived. Here the pair runs
# on the control-plane nodes themselves, so HAProxy must not take the
# apiserver's port on the VIP: the plan refuses 10.0.0.100:6443 while
# kube-apiserver binds every address on 6443.
resource "kha_cluster_endpoints" "vip" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  worker_nodes        = [for i in [1, 2] : { name = "w${i}", ip = "10.0.0.2${i}" }]
  external_lb = {
    address = "10.0.0.100"
    port    = 8443
    nodes   = ["cp1", "cp2"] # the hosts of kha_haproxy_config (role external) and kha_keepalived_config
  }
}
