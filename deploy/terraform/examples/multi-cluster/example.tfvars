# Copy to terraform.tfvars and edit. CI plans and renders the example with
# this file (deploy/terraform/check.sh).
image = "registry.example.com/cellrouter:v0.1.0"
contexts = {
  global = "gke_example_us-central1_global"
  east   = "gke_example_us-east1_cells"
  west   = "gke_example_us-west1_cells"
}
global_gossip_ip                   = "10.128.0.50"
internal_load_balancer_annotations = { "networking.gke.io/load-balancer-type" = "Internal" }
# The east cluster's pods are not routed from the others: the cell there
# advertises a reserved internal IP; the west cell advertises its pod IP.
cell_advertise_addresses = { east = "10.142.0.60" }
# Deployed secure: the key file and the tier certificates from Secrets in
# the namespace of every cluster (for example made by cert-manager), or
# inline (api_keys.key_file, tls.ca_pem, tls.global and tls.cell) for the
# modules to create them.
api_keys = { secret_name = "cellrouter-api-keys" }
tls = {
  global_secret_name = "globald-tls"
  cell_secret_name   = "cell-tls"
}
