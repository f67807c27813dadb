# kha quickstart: the apiserver access matrix of a three-node HA control plane
# with two workers, computed at plan time. `make demo` applies it.

terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

variable "external_lb_address" {
  description = "VIP of an external load balancer for clients outside the cluster; null for none."
  type        = string
  default     = "10.0.0.100"
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [
    { name = "w1", ip = "10.0.0.21" },
    { name = "w2", ip = "10.0.0.22" },
  ]

  # Workers reach the apiservers through HAProxy on their own loopback;
  # clients outside the cluster use the external load balancer.
  local_lb = {
    enabled          = true
    type             = "haproxy"
    healthcheck_port = 8081
  }
  external_lb = var.external_lb_address == null ? null : {
    address     = var.external_lb_address
    port        = 8443
    domain_name = "k8s.example.com"
  }
}

output "mode" {
  value = kha_cluster_endpoints.cluster.mode
}

output "endpoints" {
  value = kha_cluster_endpoints.cluster.endpoints
}

output "node_endpoints" {
  value = kha_cluster_endpoints.cluster.node_endpoints
}

output "kubeadm_control_plane_endpoint" {
  value = kha_cluster_endpoints.cluster.kubeadm_control_plane_endpoint
}

output "apiserver_cert_sans" {
  value = kha_cluster_endpoints.cluster.apiserver_cert_sans
}

output "local_lb" {
  value = {
    type     = kha_cluster_endpoints.cluster.local_lb_type
    listen   = kha_cluster_endpoints.cluster.local_lb_listen
    backends = kha_cluster_endpoints.cluster.local_lb_backends
    nodes    = kha_cluster_endpoints.cluster.local_lb_nodes
  }
}

# Push what the matrix implies to a host over SSH (make demo points this at
# a throwaway local sshd): the node-local HAProxy config of a worker,
# validated by the real haproxy before it replaces the previous one.
variable "ssh" {
  description = "Where to push the worker's files; null to only compute."
  type = object({
    host             = string
    port             = number
    host_key         = string
    private_key_file = string
    target_dir       = string
  })
  default = null
}

resource "kha_file" "worker_haproxy" {
  count = var.ssh == null ? 0 : 1

  path = "${var.ssh.target_dir}/haproxy/haproxy.cfg"
  content = templatefile("${path.module}/haproxy.cfg.tftpl", {
    listen   = kha_cluster_endpoints.cluster.local_lb_listen
    backends = kha_cluster_endpoints.cluster.local_lb_backends
  })
  validate_command = "haproxy -c -q -f %s"

  ssh = {
    host           = var.ssh.host
    port           = var.ssh.port
    host_key       = var.ssh.host_key
    private_key_wo = file(var.ssh.private_key_file)
  }
  keep_on_destroy = true
}

output "pushed" {
  value = var.ssh == null ? null : {
    path          = kha_file.worker_haproxy[0].path
    sha256        = kha_file.worker_haproxy[0].sha256
    remote_sha256 = kha_file.worker_haproxy[0].remote_sha256
  }
}
