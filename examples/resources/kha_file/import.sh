# host:port:path; credentials and host keys come from the provider's default_ssh.
terraform import kha_file.haproxy 10.0.0.21:22:/etc/haproxy/haproxy.cfg
