# The way out for a host that is gone for good: a removed block with
# destroy = false takes kha_file.gone out of the state and leaves the
# host alone (Terraform 1.7+).
removed {
  from = kha_file.gone
  lifecycle {
    destroy = false
  }
}
