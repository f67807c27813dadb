# kha quickstart: the apiserver access matrix of a three-node HA control
# plane with workers, computed at plan time; optionally one worker's
# node-local HAProxy pushed over SSH and started. `make demo` applies it to
# a local sshd with stand-in apiservers.

terraform {
  required_providers {
    kha = {
      source  = "kha/kha"
      version = "~> 0.2"
    }
  }
}

variable "control_plane_nodes" {
  description = "Control-plane nodes: name and the address kube-apiserver listens on."
  type        = list(object({ name = string, ip = string }))
  default = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
}

variable "worker_nodes" {
  description = "Worker nodes; each reaches the apiservers through HAProxy on its own loopback."
  type        = list(object({ name = string, ip = string }))
  default = [
    { name = "w1", ip = "10.0.0.21" },
    { name = "w2", ip = "10.0.0.22" },
  ]
}

variable "external_lb_address" {
  description = "VIP of an external load balancer for clients outside the cluster; null for none."
  type        = string
  default     = "10.0.0.100"
}

variable "worker" {
  description = "Where to run the first worker's node-local HAProxy, over SSH; null to only compute."
  type = object({
    host             = string
    port             = number
    host_key         = string
    private_key_file = string
    config_dir       = string
    ca_file          = string # the cluster CA, to verify the apiservers
    reload_command   = string # e.g. "systemctl reload-or-restart haproxy"
    destroy_command  = string # e.g. "systemctl stop haproxy"
  })
  default = null
}

# Credentials on the provider stay out of state and serve refresh and destroy.
provider "kha" {
  default_ssh = var.worker == null ? null : {
    host        = var.worker.host
    port        = var.worker.port
    host_key    = var.worker.host_key
    private_key = file(var.worker.private_key_file)
  }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = var.control_plane_nodes
  worker_nodes        = var.worker_nodes

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

# The first worker's node-local load balancer: rendered from the matrix,
# checked by the host's haproxy before it replaces the previous config, then
# (re)started by reload_command.
resource "kha_haproxy_config" "worker" {
  count = var.worker == null ? 0 : 1

  listen           = kha_cluster_endpoints.cluster.local_lb_listen
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8081
  health_check     = { ca_file = var.worker.ca_file }
  config_path      = "${var.worker.config_dir}/haproxy.cfg"
  pid_file         = "${var.worker.config_dir}/haproxy.pid"
  reload_command   = var.worker.reload_command
  destroy_command  = var.worker.destroy_command
  ssh              = {}
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
    backends = kha_cluster_endpoints.cluster.apiserver_backends
    nodes    = kha_cluster_endpoints.cluster.local_lb_nodes
  }
}

output "worker_haproxy" {
  value = var.worker == null ? null : {
    config_path   = kha_haproxy_config.worker[0].config_path
    sha256        = kha_haproxy_config.worker[0].sha256
    remote_sha256 = kha_haproxy_config.worker[0].remote_sha256
  }
}
