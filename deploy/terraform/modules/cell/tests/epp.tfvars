# The cell as the Endpoint Picker of an InferencePool it creates, with its
# gateway advertised to the global tier. CI renders the module with these
# values and runs `celld --check-config` on the result
# (deploy/terraform/check.sh); tests/epp.tftest.hcl covers the same
# settings at plan.
name      = "cell-epp"
namespace = "llm"
image     = "registry.example.com/cellrouter:v1.2.0"
discovery = { inference_pool = "llama-pool" }
gossip    = { seeds = ["globald-gossip.router.svc.cluster.local:7946"] }
epp = {
  port            = 9002
  failure_mode    = "FailClose"
  gateway_address = "10.20.0.5:80"
  inference_pool  = { name = "llama-pool", selector = { app = "vllm-llama" }, target_ports = [8000] }
}
