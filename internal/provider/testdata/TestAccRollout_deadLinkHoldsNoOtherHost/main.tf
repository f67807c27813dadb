# Three hosts, one at a time after a canary, and a failure that does not
# stop the others: a host whose link goes dead holds its turn until its
# own update timeout, and the others then get theirs.
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "hosts" {
  type = list(object({ port = number, dir = string }))
}
variable "content" { type = string }

provider "kha" {
  default_ssh = { private_key = var.private_key, known_hosts = var.known_hosts }
  rollout     = { canary = 1, batch = 1, stop_on_failure = false }
}

resource "kha_file" "lb" {
  count = length(var.hosts)

  path     = "${var.hosts[count.index].dir}/lb.cfg"
  content  = var.content
  ssh      = { host = "127.0.0.1", port = var.hosts[count.index].port }
  timeouts = { create = "10s", update = "10s" }
}
