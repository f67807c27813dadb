terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_nodes        = [{ name = "w1", ip = "10.0.0.21" }]
}

# endpoints.global is https://localhost:6443 here: handed to a pod, it
# reaches nothing, and the plan fails.
output "cilium" { value = provider::kha::pod_endpoint(kha_cluster_endpoints.test.endpoints.global).host }
