resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]
  local_lb     = { port = 16443, healthcheck_port = 8081 }
  ip_family    = "dual"
}

resource "kha_haproxy_config" "w1" {
  listen           = kha_cluster_endpoints.c.local_lb_listen
  backends         = kha_cluster_endpoints.c.local_lb_backends
  healthcheck_port = 8081
  health_check     = { ca_file = "/etc/kubernetes/pki/ca.crt" }
  delivery         = "static_pod"
}

resource "kha_nginx_config" "w1" {
  listen   = kha_cluster_endpoints.c.local_lb_listen
  backends = kha_cluster_endpoints.c.local_lb_backends
}

resource "kha_haproxy_config" "external" {
  role             = "external"
  listen           = { address = "10.0.0.100", port = 8443 }
  backends         = kha_cluster_endpoints.c.apiserver_backends
  healthcheck_port = 8081
  health_check     = { ca_file = "/etc/kubernetes/pki/ca.crt" }
}
