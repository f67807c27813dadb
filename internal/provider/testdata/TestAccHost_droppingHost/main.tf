# Resources of several types on one host, which later drops every packet.
variable "host" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "dir" { type = string }
variable "files" { type = number }

provider "kha" {
  default_ssh = {
    private_key     = var.private_key
    known_hosts     = var.known_hosts
    refresh_timeout = "12s" # longer than a dial attempt's own 10 s
    timeout         = "30s"
  }
}

resource "kha_file" "f" {
  count   = var.files
  path    = "${var.dir}/f${count.index}.cfg"
  content = "file ${count.index}\n"
  ssh     = { host = var.host }
}

resource "kha_hosts_entries" "api" {
  path    = "${var.dir}/hosts"
  entries = ["10.0.0.100 api.k8s.example.com"]
  ssh     = { host = var.host }
}
