# host:port:<config_path>; credentials and host keys come from the provider's default_ssh.
# Import records the config file's digest: the inputs come from the configuration, and the
# next plan is an update that writes, validates and reloads what the configuration renders.
terraform import kha_nginx_config.w1 10.0.0.21:22:/etc/nginx/nginx.conf
