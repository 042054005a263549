# Copy to terraform.tfvars and edit. CI plans and renders the example with
# this file (deploy/terraform/check.sh).
image        = "localhost/cellrouter:dev"
kube_context = "kind-cellrouter"
cells = {
  "cell-a" = { demo_engines = 2 }
  "cell-b" = { demo_engines = 2 }
}
# Deployed secure: the key file and the tier certificates from Secrets in
# the namespace (for example made by cert-manager; see README.md for
# openssl commands and kubectl create secret), or inline (api_keys.key_file,
# tls.ca_pem, tls.global and tls.cell) for the modules to create them.
api_keys = { secret_name = "cellrouter-api-keys" }
tls = {
  global_secret_name = "globald-tls"
  cell_secret_name   = "cell-tls"
}
