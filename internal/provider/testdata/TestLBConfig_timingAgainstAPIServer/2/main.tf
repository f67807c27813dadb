# The fixes the warnings name: a longer shutdown delay, a longer client
# timeout, a longer idle timeout of the cloud load balancer. The plan is
# silent.
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes               = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
  worker_nodes                      = [{ name = "w1", ip = "10.0.0.21" }]
  external_lb                       = { address = "10.0.0.100", port = 8443 }
  local_lb                          = { enabled = true }
  apiserver_shutdown_delay_duration = "20s"
  apiserver_min_request_timeout     = 3600
  lb_idle_timeout                   = "1h"
}

resource "kha_haproxy_config" "w1" {
  listen         = kha_cluster_endpoints.c.local_lb_listen
  backends       = kha_cluster_endpoints.c.apiserver_backends
  health_check   = { interval = "5s", fall = 3 }
  proxy_timeouts = { client = "1h", server = "1h" }
}

resource "kha_nginx_config" "w1" {
  listen         = kha_cluster_endpoints.c.local_lb_listen
  backends       = kha_cluster_endpoints.c.apiserver_backends
  proxy_timeouts = { client = "2h" }
}
