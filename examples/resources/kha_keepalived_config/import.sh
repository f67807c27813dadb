# host:port:<config_path>; credentials and host keys come from the provider's default_ssh.
# Import records the config file's digest; the next plan writes what the configuration renders.
terraform import 'kha_keepalived_config.vip["lb1"]' 10.0.0.5:22:/etc/keepalived/keepalived.conf
