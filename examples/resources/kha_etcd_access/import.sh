# host:port:<env_path>; credentials and host keys come from the provider's default_ssh.
# Import records the environment file's digest; the next plan writes what the configuration renders.
terraform import kha_etcd_access.worker_proxy 10.0.0.21:22:/etc/kha/etcd-access.env
