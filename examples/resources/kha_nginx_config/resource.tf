resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
}

# Render only: no `ssh`, the config is known at plan time for cloud-init.
resource "kha_nginx_config" "worker" {
  listen   = kha_cluster_endpoints.cluster.local_lb_listen
  backends = kha_cluster_endpoints.cluster.apiserver_backends
}

output "nginx_conf" {
  value = kha_nginx_config.worker.rendered
}
