# The apiservers wait 12s before they close their port and let watches run
# an hour at least; HAProxy needs up to 15s to drop a stopping apiserver
# and cuts idle connections after 10m on the client side: two warnings,
# each at the attribute to change. nginx's one timeout is long enough.
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes               = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
  worker_nodes                      = [{ name = "w1", ip = "10.0.0.21" }]
  external_lb                       = { address = "10.0.0.100", port = 8443 }
  local_lb                          = { enabled = true }
  apiserver_shutdown_delay_duration = "12s"
  apiserver_min_request_timeout     = 3600
  # An AWS Network Load Balancer's default idle timeout: a third warning.
  lb_idle_timeout = "350s"
}

resource "kha_haproxy_config" "w1" {
  listen         = kha_cluster_endpoints.c.local_lb_listen
  backends       = kha_cluster_endpoints.c.apiserver_backends
  health_check   = { interval = "5s", fall = 3 }
  proxy_timeouts = { server = "1h" }
}

resource "kha_nginx_config" "w1" {
  listen         = kha_cluster_endpoints.c.local_lb_listen
  backends       = kha_cluster_endpoints.c.apiserver_backends
  proxy_timeouts = { client = "2h" }
}
