# A kha_file whose credentials and host keys come from the provider's
# default_ssh, as refresh, import and destroy need.
variable "host" { type = string }
variable "port" { type = number }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" {
  type    = string
  default = null
}
variable "trust_on_first_use" {
  type    = bool
  default = null
}
variable "path" { type = string }
variable "content" {
  type    = string
  default = null
}
variable "content_wo" {
  type      = string
  default   = null
  sensitive = true
  ephemeral = true
}
variable "mode" {
  type    = string
  default = null
}
variable "owner" {
  type    = string
  default = null
}
variable "validate_command" {
  type    = string
  default = null
}
variable "reload_command" {
  type    = string
  default = null
}
variable "destroy_command" {
  type    = string
  default = null
}
variable "on_destroy" {
  type    = string
  default = null
}
variable "adopt" {
  type    = bool
  default = null
}
variable "update_timeout" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = {
    private_key                 = var.private_key
    known_hosts                 = var.known_hosts
    insecure_trust_on_first_use = var.trust_on_first_use
  }
}

resource "kha_file" "test" {
  path             = var.path
  content          = var.content
  content_wo       = var.content_wo
  mode             = var.mode
  owner            = var.owner
  validate_command = var.validate_command
  reload_command   = var.reload_command
  destroy_command  = var.destroy_command
  on_destroy       = var.on_destroy
  adopt            = var.adopt
  ssh = {
    host = var.host
    port = var.port
  }
  # Left out unless set, as in most configurations: import records none.
  timeouts = var.update_timeout == null ? null : { update = var.update_timeout }
}
