# The API name in DNS (with `dns`): an A (AAAA) record for api_domain_name
# that follows the VIP, in the same apply as the VIP's address. nsupdate (BIND's
# tools, on the machine that runs Terraform) sends it to the zone's primary
# server as one RFC 2136 update, signed with a TSIG key.
#
# Three orderings keep every client that resolves the name on an address
# that serves:
#   1. triggers_replace on the name and the address: either change is a new
#      record, so the record cannot lag behind the configuration;
#   2. depends_on the VIP pair: the record moves once keepalived holds the
#      new address and HAProxy serves it (both serve the old one beside it
#      until kha_handover.moved);
#   3. kha_handover.moved depends on the record (main.tf): the old address
#      is retired only after the record names the new one and every cached
#      answer has expired (the update waits one TTL).
# create_before_destroy adds the new record before the old one's destroy,
# which deletes its own address only, so it never removes the new record.
resource "terraform_data" "api_record" {
  count = var.dns != null && local.has_vip ? 1 : 0

  triggers_replace = [var.api_domain_name, var.vip]
  input = {
    server   = var.dns.server
    key_file = var.dns.key_file
    name     = trimsuffix(var.api_domain_name, ".")
    address  = var.vip
    type     = strcontains(var.vip, ":") ? "AAAA" : "A"
    ttl      = var.dns.ttl
  }

  # One update replaces every record of the name and type: resolvers never
  # see an empty answer. The input travels as environment variables, given
  # to printf as arguments, never as shell text.
  provisioner "local-exec" {
    command     = <<-EOT
      printf 'server %s\nupdate delete %s. %s\nupdate add %s. %s %s %s\nsend\n' "$server" "$name" "$type" "$name" "$ttl" "$type" "$address" |
        nsupdate -k "$key_file" && sleep "$ttl"
    EOT
    environment = self.input
  }

  # The old record's address only: by now the name has the new one.
  provisioner "local-exec" {
    when        = destroy
    command     = "printf 'server %s\\nupdate delete %s. %s %s\\nsend\\n' \"$server\" \"$name\" \"$type\" \"$address\" | nsupdate -k \"$key_file\""
    environment = self.input
  }

  lifecycle {
    create_before_destroy = true
  }

  depends_on = [kha_keepalived_config.vip, kha_haproxy_config.vip]
}
