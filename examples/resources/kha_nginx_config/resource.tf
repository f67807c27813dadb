resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  # The node-local load balancer runs on the workers: without any, there is
  # nothing for it to listen on.
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]
}

# Render only: no `ssh`, the config is known at plan time for cloud-init.
resource "kha_nginx_config" "worker" {
  listen   = kha_cluster_endpoints.cluster.local_lb_listen
  backends = kha_cluster_endpoints.cluster.apiserver_backends
}

output "nginx_conf" {
  value = kha_nginx_config.worker.rendered
}

# The same config kept in place on the worker over SSH: validated with the
# host's nginx before it replaces the old one, reloaded, and verified to
# reach an apiserver.
resource "kha_nginx_config" "w1" {
  listen   = kha_cluster_endpoints.cluster.local_lb_listen
  backends = kha_cluster_endpoints.cluster.apiserver_backends
  ssh      = { host = "10.0.0.21", user = "admin", sudo = true }
}
