# host:port:path, or host:port:path#marker for a block with another marker than "entries".
# Import records the block's digest; the rest of the file is never read into state.
terraform import 'kha_hosts_entries.lb["cp1"]' 10.0.0.11:22:/etc/hosts#entries
