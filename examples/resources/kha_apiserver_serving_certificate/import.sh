# host:port:path of the serving certificate. The SANs it has become the resource's,
# and the CA's and the key's paths are kubeadm's next to it.
terraform import 'kha_apiserver_serving_certificate.cp["cp1"]' 10.0.0.11:22:/etc/kubernetes/pki/apiserver.crt
