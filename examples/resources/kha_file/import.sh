# host:port:path; credentials and host keys come from the provider's default_ssh.
# Import reads the file's digest and mode, never its content (it may be a secret):
# the configuration says what the file should hold, and the next apply writes it.
terraform import kha_file.haproxy 10.0.0.21:22:/etc/haproxy/haproxy.cfg
