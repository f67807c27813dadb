resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  external_lb = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}

# Every node resolves the load balancer's name without DNS.
resource "kha_hosts_entries" "lb" {
  for_each = { for n in kha_cluster_endpoints.cluster.control_plane_nodes : n.name => n.ip }

  entries = kha_cluster_endpoints.cluster.hosts_entries # ["10.0.0.100 api.k8s.example.com"]
  ssh     = { host = each.value, user = "admin", sudo = true }
}
