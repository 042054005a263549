# The global tier's API keys and tier certificate from Secrets mounted as
# directories, and the refusal of an exposed endpoint without keys.

mock_provider "kubernetes" {}

variables {
  image = "registry.example.com/cellrouter:v1.2.0"
}

run "keys_and_mtls_from_created_secrets" {
  command = plan
  variables {
    api_keys = { key_file = "tenants: []\nkeys: []\n" }
    tls      = { cert_pem = "CERT", key_pem = "KEY", ca_pem = "CA", server_name = "cellrouter-cell", serve = true }
  }
  assert {
    condition = (slice(kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].args, 7, 13) == tolist([
      "--api-keys=/etc/globald/keys/api-keys.yaml", "--tls-cert=/etc/globald/tls/tls.crt", "--tls-key=/etc/globald/tls/tls.key",
      "--tls-ca=/etc/globald/tls/ca.crt", "--tls-server-name=cellrouter-cell", "--serve-tls",
    ]))
    error_message = "the key file and the certificate are read from the mounted directories"
  }
  assert {
    condition     = kubernetes_secret_v1.api_keys[0].metadata[0].name == "globald-api-keys" && kubernetes_secret_v1.tls[0].type == "kubernetes.io/tls"
    error_message = "the module creates both Secrets"
  }
  assert {
    condition = length([for m in kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].volume_mount : m
      if contains(["api-keys", "tls"], m.name) && m.read_only == true && (m.sub_path == null || m.sub_path == "")
    ]) == 2
    error_message = "both Secrets are mounted read-only as directories (no subPath: a rotation reaches the files)"
  }
  assert {
    condition     = kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].scheme == "HTTPS"
    error_message = "serving TLS, the probes speak HTTPS"
  }
}

run "existing_secrets" {
  command = plan
  variables {
    service  = { type = "LoadBalancer" }
    api_keys = { secret_name = "fleet-keys", key = "keys.yaml" }
    tls      = { secret_name = "globald-cert" }
  }
  assert {
    condition = (length(kubernetes_secret_v1.api_keys) == 0 && length(kubernetes_secret_v1.tls) == 0
    && [for v in kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].volume : v.secret[0].secret_name if length(v.secret) > 0] == ["fleet-keys", "globald-cert"])
    error_message = "existing Secrets are referenced, not created"
  }
  assert {
    condition     = kubernetes_deployment_v1.globald.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].scheme == "HTTP"
    error_message = "without serve, globald's listeners stay plaintext"
  }
}

run "load_balancer_without_keys" {
  command = plan
  variables {
    service = { type = "LoadBalancer" }
  }
  expect_failures = [var.service]
}

run "node_port_without_keys" {
  command = plan
  variables {
    service = { type = "NodePort" }
  }
  expect_failures = [var.service]
}

run "keys_both_sources" {
  command = plan
  variables {
    api_keys = { key_file = "keys: []", secret_name = "x" }
  }
  expect_failures = [var.api_keys]
}

run "tls_partial" {
  command = plan
  variables {
    tls = { cert_pem = "CERT" }
  }
  expect_failures = [var.tls]
}
