# A host where another local user can write next to the files kha
# manages: a kha_file (with a kha_handover of it, as a load balancer's
# would be), a kha_handover of a file kha does not manage, and a hosts
# block, each only where its path is set.
variable "host" { type = string }
variable "port" { type = number }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "file_path" {
  type    = string
  default = null
}
variable "content" {
  type    = string
  default = "frontend kube\n"
}
variable "validate_command" {
  type    = string
  default = null
}
variable "handover_of" {
  type    = string
  default = null
}
variable "hosts_path" {
  type    = string
  default = null
}
# Run on the host when destroy removes a file beside file_path, before
# file_path's own removal: a racer between the refresh and the removal.
variable "racer_command" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = {
    private_key = var.private_key
    known_hosts = var.known_hosts
  }
}

resource "kha_file" "lb" {
  count            = var.file_path == null ? 0 : 1
  path             = var.file_path
  content          = var.content
  validate_command = var.validate_command
  ssh              = { host = var.host, port = var.port }
}

resource "kha_handover" "lb" {
  count         = var.file_path == null ? 0 : 1
  target_id     = kha_file.lb[0].id
  target_sha256 = kha_file.lb[0].sha256
  ssh           = { host = var.host, port = var.port }
}

resource "kha_handover" "other" {
  count         = var.handover_of == null ? 0 : 1
  target_id     = "${var.host}:${var.port}:${var.handover_of}"
  target_sha256 = sha256(var.handover_of)
  ssh           = { host = var.host, port = var.port }
}

resource "kha_hosts_entries" "api" {
  count   = var.hosts_path == null ? 0 : 1
  path    = var.hosts_path
  entries = ["10.0.0.100 api.k8s.example.com"]
  ssh     = { host = var.host, port = var.port }
}

resource "kha_file" "racer" {
  count           = var.racer_command == null ? 0 : 1
  path            = "${dirname(var.file_path)}/racer.cfg"
  content         = "racer\n"
  destroy_command = var.racer_command
  ssh             = { host = var.host, port = var.port }
  depends_on      = [kha_file.lb]
}
