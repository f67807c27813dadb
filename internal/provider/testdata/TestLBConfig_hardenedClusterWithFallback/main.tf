# A hardened cluster (kube-apiserver --anonymous-auth=false) whose workers
# keep an API path through the external load balancer while every direct
# route fails.
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes      = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }]
  worker_nodes             = [{ name = "w1", ip = "10.0.0.21" }]
  apiserver_anonymous_auth = false
  local_lb                 = { enabled = true, healthcheck_port = 8081 }
  external_lb              = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}

resource "kha_haproxy_config" "w1" {
  listen           = kha_cluster_endpoints.c.local_lb_listen
  backends         = kha_cluster_endpoints.c.local_lb_backends
  fallback         = kha_cluster_endpoints.c.local_lb_fallback
  healthcheck_port = 8081
  health_check = {
    type        = "https_client_cert"
    client_cert = "/etc/kubernetes/pki/lb-health.crt"
  }
  servers        = { slowstart = "1m", maxconn = 1000, maxqueue = 256 }
  proxy_timeouts = { client = "5m", server = "15m" }
  delivery       = "static_pod"
}

resource "kha_nginx_config" "w1" {
  listen             = kha_cluster_endpoints.c.local_lb_listen
  backends           = kha_cluster_endpoints.c.local_lb_backends
  fallback           = kha_cluster_endpoints.c.local_lb_fallback
  worker_connections = 16384
  servers            = { fail_timeout = "10s" }
}
