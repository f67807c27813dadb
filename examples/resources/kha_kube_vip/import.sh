# host:port:<manifest_path>; credentials and host keys come from the provider's default_ssh.
# Import records the manifest's digest; the next plan writes what the configuration renders.
terraform import 'kha_kube_vip.cp["cp1"]' 10.0.0.11:22:/etc/kubernetes/manifests/kube-vip.yml
