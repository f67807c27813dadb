# An HCP Terraform / Terraform Cloud workspace that keeps workers' node-local
# HAProxy in place over SSH. The workspace sets the variables below; the
# private key is a sensitive variable, known_hosts is committed next to this
# file, and the runs happen on an agent inside the cluster's network.

terraform {
  required_version = ">= 1.11" # write-only attributes

  cloud {
    organization = "example"
    workspaces {
      name = "k8s-prod-control-plane"
    }
  }

  required_providers {
    kha = {
      # The public registry once published; until then the organization's
      # private registry (RELEASING.md), e.g. "app.terraform.io/example/kha".
      source  = "kha/kha"
      version = "~> 0.2"
    }
  }
}

variable "ssh_user" {
  description = "Login user on the nodes: a user with passwordless sudo for applies; a read-only one for plan-only workspaces."
  type        = string
  default     = "kha"
}

variable "ssh_private_key" {
  description = "The private key of ssh_user (workspace variable, HCL off, sensitive)."
  type        = string
  sensitive   = true
  ephemeral   = true
}

variable "control_plane_nodes" {
  type = list(object({ name = string, ip = string }))
}

variable "worker_nodes" {
  type = list(object({ name = string, ip = string }))
}

variable "cluster_ca" {
  description = "The cluster CA (PEM), for HAProxy's health checks."
  type        = string
}

# Provider configuration is never written to state or plan: the key set here
# serves refresh and destroy too, and no resource needs it again.
provider "kha" {
  default_ssh = {
    user        = var.ssh_user
    sudo        = var.ssh_user != "root"
    private_key = var.ssh_private_key
    known_hosts = file("${path.module}/known_hosts") # ssh-keyscan output, reviewed and committed
  }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = var.control_plane_nodes
  worker_nodes        = var.worker_nodes
  local_lb            = { enabled = true, type = "haproxy", healthcheck_port = 8081 }
}

resource "kha_file" "cluster_ca" {
  for_each = { for n in var.worker_nodes : n.name => n }
  ssh      = { host = each.value.ip }
  path     = "/etc/haproxy/ca.crt"
  content  = var.cluster_ca
}

resource "kha_haproxy_config" "worker" {
  for_each         = { for n in var.worker_nodes : n.name => n }
  ssh              = { host = each.value.ip }
  listen           = kha_cluster_endpoints.cluster.local_lb_listen
  backends         = kha_cluster_endpoints.cluster.local_lb_backends
  healthcheck_port = 8081
  health_check     = { ca_file = kha_file.cluster_ca[each.key].path }
}
