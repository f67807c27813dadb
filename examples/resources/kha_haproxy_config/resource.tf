resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [for i in range(1, 4) : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb     = { type = "haproxy", healthcheck_port = 8081 }
}

# The node-local load balancer on every worker, as a kubelet static pod.
resource "kha_haproxy_config" "worker" {
  for_each = kha_cluster_endpoints.cluster.local_lb_node_ips # name => ip

  listen           = kha_cluster_endpoints.cluster.local_lb_listen
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8081
  delivery         = "static_pod"

  ssh = {
    host = each.value
    user = "admin"
    sudo = true
  }
}

# An external load balancer on a VIP, run by the host's haproxy service.
resource "kha_haproxy_config" "vip" {
  role     = "external"
  listen   = { address = "10.0.0.100", port = 8443 }
  backends = kha_cluster_endpoints.cluster.apiserver_backends
  # The CA is not on this host unless copied there (kha_file).
  health_check   = { ca_file = "/etc/haproxy/kubernetes-ca.crt" }
  proxy_timeouts = { client = "1h", server = "1h" }

  ssh = { host = "10.0.0.5", user = "admin", sudo = true }
}
