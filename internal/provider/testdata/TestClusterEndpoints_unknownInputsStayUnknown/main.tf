resource "terraform_data" "later" {}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [
    # Known only after apply: the matrix must not pretend to know it.
    { name = "cp1", ip = cidrhost("10.0.0.0/24", length(terraform_data.later.id) > 0 ? 11 : 12) },
  ]
}
