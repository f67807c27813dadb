terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

variable "dir" { default = "/tmp/stgen/files" }

provider "kha" {
  default_ssh = {
    host        = "127.0.0.1"
    port        = 22661
    host_key    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAPx34neoJg2WadNKRklj/5r55JADIo5/H68E+TsuUG3"
    private_key = file("/tmp/stgen/client")
  }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
  worker_nodes        = [{ name = "w1", ip = "10.0.0.21" }]
  local_lb            = { enabled = true, type = "haproxy", healthcheck_port = 8081 }
  external_lb         = { address = "10.0.0.100", port = 8443, domain_name = "k8s.example.com" }
}

resource "kha_file" "f" {
  path           = "${var.dir}/file.conf"
  content        = "hello\n"
  mode           = "0644"
  reload_command = "true"
  ssh            = {}
}

resource "kha_haproxy_config" "lb" {
  listen              = kha_cluster_endpoints.cluster.local_lb_listen
  backends            = kha_cluster_endpoints.cluster.local_lb_backends
  healthcheck_port    = 8081
  health_check        = { ca_file = "${var.dir}/ca.crt" }
  config_path         = "${var.dir}/haproxy.cfg"
  reload_command      = "true"
  ssh                 = {}
}

resource "kha_nginx_config" "lb" {
  listen              = kha_cluster_endpoints.cluster.local_lb_listen
  backends            = kha_cluster_endpoints.cluster.local_lb_backends
  config_path         = "${var.dir}/nginx.conf"
  reload_command      = "true"
  ssh                 = {}
}

resource "kha_keepalived_config" "vip" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = "10.0.0.5", priority = 150 }, { name = "lb2", ip = "10.0.0.6", priority = 100 }]
  vip               = "10.0.0.100"
  vip_prefix        = 24
  interface         = "eth0"
  virtual_router_id = 51
  healthcheck_port  = 8081
  config_path       = "${var.dir}/keepalived.conf"
  reload_command    = "true"
  ssh               = {}
}

resource "kha_etcd_access" "etcd" {
  members = [{ name = "etcd1", ip = "10.0.0.11" }, { name = "etcd2", ip = "10.0.0.12" }, { name = "etcd3", ip = "10.0.0.13" }]
}

resource "kha_etcd_access" "proxy" {
  members        = kha_etcd_access.etcd.members
  mode           = "local_proxy"
  env_path       = "${var.dir}/etcd-access.env"
  proxy_config_path = "${var.dir}/etcd-proxy.cfg"
  reload_command = "true"
  ssh            = {}
}

resource "kha_hosts_entries" "api" {
  entries = kha_cluster_endpoints.cluster.hosts_entries
  path    = "${var.dir}/hosts"
  ssh     = {}
}
