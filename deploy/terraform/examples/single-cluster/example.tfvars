# Copy to terraform.tfvars and edit. CI plans and renders the example with
# this file (deploy/terraform/check.sh).
image        = "localhost/cellrouter:dev"
kube_context = "kind-cellrouter"
cells = {
  "cell-a" = { demo_engines = 2 }
  "cell-b" = { demo_engines = 2 }
}
