# Plan-time tests of the cell module against a mocked Kubernetes provider:
# what would be created, with which names, labels, ports, probes, replica
# counts and rendered celld configuration. No cluster is involved.

mock_provider "kubernetes" {}

variables {
  name  = "cell-a"
  image = "registry.example.com/cellrouter:v1.2.0"
  pods = [{
    id              = "pod-0"
    address         = "10.0.0.7:8000"
    model           = "llama-3.1-8b"
    zmq_endpoint    = "tcp://10.0.0.7:5557"
    replay_endpoint = "tcp://10.0.0.7:5558"
    kv_blocks       = 16384
  }]
}

run "standalone_cell_with_one_pod" {
  command = plan

  assert {
    condition     = kubernetes_deployment_v1.celld.metadata[0].name == "cell-a" && kubernetes_deployment_v1.celld.metadata[0].namespace == "default"
    error_message = "the Deployment is named after var.name in var.namespace"
  }
  assert {
    condition     = kubernetes_deployment_v1.celld.spec[0].replicas == "1" && kubernetes_deployment_v1.celld.spec[0].strategy[0].type == "Recreate"
    error_message = "one celld, replaced by Recreate"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].labels["app.kubernetes.io/name"] == "celld"
      && kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].labels["app.kubernetes.io/instance"] == "cell-a"
    && kubernetes_deployment_v1.celld.spec[0].selector[0].match_labels == tomap({ "app.kubernetes.io/name" = "celld", "app.kubernetes.io/instance" = "cell-a" }))
    error_message = "pods carry the selector labels"
  }
  assert {
    condition     = kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].command == tolist(["/usr/local/bin/celld"])
    error_message = "the container runs celld"
  }
  assert {
    condition     = kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].args == tolist(["--config=/etc/cellrouter/celld.yaml", "--log-level=info"])
    error_message = "a standalone cell gets its config and log level, no gossip flags"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].path == "/readyz"
      && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].readiness_probe[0].http_get[0].port == "http"
      && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].liveness_probe[0].http_get[0].path == "/healthz"
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].liveness_probe[0].http_get[0].port == "http")
    error_message = "readiness on /readyz and liveness on /healthz, on the http port"
  }
  assert {
    condition = ([for p in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].port : "${p.name}/${p.container_port}/${p.protocol}"]
    == ["http/8080/TCP", "grpc/9090/TCP"])
    error_message = "a standalone cell exposes http 8080 and grpc 9090 only"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].annotations["prometheus.io/scrape"] == "true"
      && kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].annotations["prometheus.io/port"] == "8080"
    && kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].annotations["prometheus.io/path"] == "/metrics")
    error_message = "pods are annotated for Prometheus on http /metrics"
  }
  assert {
    condition     = kubernetes_deployment_v1.celld.spec[0].template[0].metadata[0].annotations["cellrouter.dev/config-sha256"] == sha256(kubernetes_config_map_v1.celld.data["celld.yaml"])
    error_message = "the pod template carries the configuration's hash, so a new configuration rolls the pod"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].security_context[0].run_as_non_root == true
      && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].security_context[0].run_as_user == "65532"
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].security_context[0].read_only_root_filesystem == true)
    error_message = "celld runs as the image's non-root user on a read-only root"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].resources[0].requests == tomap({ cpu = "500m", memory = "512Mi" })
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].resources[0].limits == tomap({ memory = "2Gi" }))
    error_message = "default requests and limits"
  }
  assert {
    condition     = kubernetes_config_map_v1.celld.metadata[0].name == "cell-a-config" && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].volume[0].config_map[0].name == "cell-a-config"
    error_message = "the ConfigMap is mounted"
  }
  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]) == {
      cell_id   = "cell-a"
      http_addr = ":8080"
      grpc_addr = ":9090"
      pods = [{
        id           = "pod-0", address = "10.0.0.7:8000", role = "both", model = "llama-3.1-8b",
        zmq_endpoint = "tcp://10.0.0.7:5557", replay_endpoint = "tcp://10.0.0.7:5558", kv_blocks = 16384
      }]
    }
    error_message = "the rendered config holds the cell id, wildcard listeners and the pod, nothing else (celld defaults apply)"
  }
  assert {
    condition = ([for p in kubernetes_service_v1.celld.spec[0].port : "${p.name}/${p.port}/${p.target_port}"] == ["http/8080/http", "grpc/9090/grpc"]
    && kubernetes_service_v1.celld.spec[0].type == "ClusterIP" && kubernetes_service_v1.celld.metadata[0].name == "cell-a")
    error_message = "the cell's Service carries http and grpc"
  }
  assert {
    condition     = length(kubernetes_service_v1.gossip) == 0 && length(kubernetes_secret_v1.gossip) == 0 && length(kubernetes_service_v1.advertised) == 0
    error_message = "a standalone cell has no gossip Service, key or advertised load balancer"
  }
  assert {
    condition     = length(kubernetes_stateful_set_v1.engine) == 0 && length(kubernetes_service_v1.engine) == 0
    error_message = "no demo engines unless asked"
  }
  assert {
    condition     = kubernetes_pod_disruption_budget_v1.celld.spec[0].max_unavailable == "1" && kubernetes_pod_disruption_budget_v1.celld.spec[0].selector[0].match_labels["app.kubernetes.io/instance"] == "cell-a"
    error_message = "a PodDisruptionBudget covers the celld pods"
  }
  assert {
    condition     = output.http_endpoint == "http://cell-a.default.svc.cluster.local:8080" && output.grpc_endpoint == "cell-a.default.svc.cluster.local:9090" && output.gossip_address == null
    error_message = "endpoints in the cluster's DNS"
  }
}

run "demo_engines_and_gossip" {
  command = plan

  variables {
    namespace         = "router"
    pods              = []
    demo_engines      = { count = 3, model = "demo-model", time_scale = 0.5 }
    gossip            = { seeds = ["globald-gossip.router.svc.cluster.local:7946"], summary_interval = "1s" }
    gossip_secret_key = "MDEyMzQ1Njc4OWFiY2RlZg=="
  }

  assert {
    condition = (kubernetes_stateful_set_v1.engine[0].metadata[0].name == "cell-a-engine"
      && kubernetes_stateful_set_v1.engine[0].spec[0].replicas == "3"
    && kubernetes_stateful_set_v1.engine[0].spec[0].service_name == "cell-a-engine")
    error_message = "three demo engines in a StatefulSet behind their headless Service"
  }
  assert {
    condition = (kubernetes_stateful_set_v1.engine[0].spec[0].template[0].spec[0].container[0].command == tolist(["/usr/local/bin/loadtest"])
      && kubernetes_stateful_set_v1.engine[0].spec[0].template[0].spec[0].container[0].args == tolist([
        "enginesim", "--pods=1", "--host=0.0.0.0", "--base-port=8000", "--model=demo-model", "--block-size=16", "--blocks=4096", "--time-scale=0.5",
    ]))
    error_message = "each engine pod runs one loadtest enginesim pod on 8000-8002"
  }
  assert {
    condition     = kubernetes_service_v1.engine[0].spec[0].cluster_ip == "None" && [for p in kubernetes_service_v1.engine[0].spec[0].port : p.port] == [8000, 8002, 8001]
    error_message = "the engines' headless Service names http, replay and zmq"
  }
  assert {
    condition = (length(yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).pods) == 3
      && yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).pods[2] == {
        id              = "cell-a-engine-2", address = "cell-a-engine-2.cell-a-engine.router.svc.cluster.local:8000", role = "both", model = "demo-model",
        zmq_endpoint    = "tcp://cell-a-engine-2.cell-a-engine.router.svc.cluster.local:8001", kv_blocks = 4096,
        replay_endpoint = "tcp://cell-a-engine-2.cell-a-engine.router.svc.cluster.local:8002"
    })
    error_message = "the cell dials each engine by its StatefulSet DNS name"
  }
  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).gossip == {
      bind = ":7947", seeds = ["globald-gossip.router.svc.cluster.local:7946"], summary_interval = "1s"
    }
    error_message = "the gossip section binds every interface and joins the seeds; the key is not in the ConfigMap"
  }
  assert {
    condition = kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].args == tolist([
      "--config=/etc/cellrouter/celld.yaml", "--log-level=info", "--gossip-advertise=$(POD_IP):7947", "--gossip-secret-key=$(GOSSIP_SECRET_KEY)",
    ])
    error_message = "the pod IP is advertised, and the key comes from the environment"
  }
  assert {
    condition = (kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].env[0].value_from[0].field_ref[0].field_path == "status.podIP"
    && kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].env[1].value_from[0].secret_key_ref[0].name == "cell-a-gossip-key")
    error_message = "POD_IP from the downward API, GOSSIP_SECRET_KEY from the Secret"
  }
  assert {
    condition     = kubernetes_secret_v1.gossip[0].metadata[0].name == "cell-a-gossip-key"
    error_message = "the key is kept in a Secret"
  }
  assert {
    condition = (kubernetes_service_v1.gossip[0].spec[0].cluster_ip == "None" && kubernetes_service_v1.gossip[0].spec[0].publish_not_ready_addresses == true
    && [for p in kubernetes_service_v1.gossip[0].spec[0].port : "${p.port}/${p.protocol}"] == ["7947/TCP", "7947/UDP"])
    error_message = "the gossip Service is headless, lists unready pods, and carries TCP and UDP"
  }
  assert {
    condition     = [for p in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].port : p.name] == ["http", "grpc", "gossip-tcp", "gossip-udp"]
    error_message = "the gossip ports are declared on the container"
  }
  assert {
    condition     = output.gossip_address == "cell-a-gossip.router.svc.cluster.local:7947" && output.advertised_address == null && length(output.pods) == 3
    error_message = "outputs name the gossip address and the engines"
  }
}

run "advertised_load_balancer" {
  command = plan

  variables {
    gossip = {
      seeds                          = ["10.8.0.10:7946"]
      advertise_address              = "10.20.0.5"
      advertised_service_annotations = { "networking.gke.io/load-balancer-type" = "Internal" }
    }
  }

  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).gossip.advertise == "10.20.0.5:7947"
    error_message = "a fixed advertised address goes into the configuration"
  }
  assert {
    condition     = !anytrue([for a in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].args : startswith(a, "--gossip-advertise")])
    error_message = "no pod-IP override when an address is advertised"
  }
  assert {
    condition = (kubernetes_service_v1.advertised[0].spec[0].type == "LoadBalancer"
      && kubernetes_service_v1.advertised[0].spec[0].load_balancer_ip == "10.20.0.5"
      && kubernetes_service_v1.advertised[0].metadata[0].annotations["networking.gke.io/load-balancer-type"] == "Internal"
    && [for p in kubernetes_service_v1.advertised[0].spec[0].port : "${p.name}/${p.port}/${p.protocol}"] == ["http/8080/TCP", "grpc/9090/TCP", "gossip-tcp/7947/TCP", "gossip-udp/7947/UDP"])
    error_message = "the advertised load balancer forwards http, grpc and gossip (TCP and UDP) at the advertised IP"
  }
  assert {
    condition     = output.advertised_address == "10.20.0.5:7947"
    error_message = "the advertised address is an output"
  }
}

run "event_sources_and_routing" {
  command = plan

  variables {
    pods = [{ id = "pod-0", address = "10.0.0.7:8000", replay_endpoint = "tcp://10.0.0.7:5558" }]
    zmq  = { bind_port = 5557, topic_prefix = "" }
    nats = { url = "nats://nats.nats.svc:4222", replay = true }
    routing = {
      busy_threshold = 0.8
      max_attempts   = 2
      profiles_yaml  = "[{name: least, score: [{type: least-load, weight: 1}], pick: max-score}]"
      profile        = "least"
    }
    timings = { health_interval = "0s" }
    index   = { max_blocks = 1048576 }
  }

  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).zmq == { bind = "tcp://0.0.0.0:5557", topic_prefix = "" }
    error_message = "zmq.bind_port binds every interface; an empty topic prefix is kept"
  }
  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).nats == { url = "nats://nats.nats.svc:4222", replay = true }
    error_message = "NATS leaves the durable to celld, which derives one per replica"
  }
  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).routing == {
      busy_threshold = 0.8, max_attempts = 2, profile = "least",
      profiles       = [{ name = "least", score = [{ type = "least-load", weight = 1 }], pick = "max-score" }]
    }
    error_message = "routing settings and the extra profiles are rendered"
  }
  assert {
    condition = (yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).health_interval == "0s"
    && yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).index == { max_blocks = 1048576 })
    error_message = "timings and index limits are rendered"
  }
  assert {
    condition     = [for p in kubernetes_service_v1.celld.spec[0].port : "${p.name}/${p.port}"] == ["http/8080", "grpc/9090", "zmq/5557"]
    error_message = "engines reach the bound ZMQ socket through the cell's Service"
  }
  assert {
    condition     = output.zmq_endpoint == "tcp://cell-a.default.svc.cluster.local:5557"
    error_message = "the ZMQ endpoint engines connect to is an output"
  }
}

run "standalone_replicas" {
  command = plan

  variables {
    replicas            = 3
    pdb_max_unavailable = 1
    service             = { type = "LoadBalancer", annotations = { "service.beta.kubernetes.io/aws-load-balancer-internal" = "true" } }
  }

  assert {
    condition     = kubernetes_deployment_v1.celld.spec[0].replicas == "3" && kubernetes_service_v1.celld.spec[0].type == "LoadBalancer" && kubernetes_deployment_v1.celld.spec[0].strategy[0].type == "RollingUpdate"
    error_message = "a cell that dials its pods may run several replicas, updated one at a time"
  }

  assert {
    condition = anytrue([for e in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].env :
    e.name == "POD_NAME" && e.value_from[0].field_ref[0].field_path == "metadata.name"])
    error_message = "each replica's id (celld replica.id) is its pod name"
  }
}

run "default_topic_prefix" {
  command = plan
  variables {
    zmq = { bind_port = 5557, topic_prefix = "kv@" }
  }

  assert {
    condition     = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).zmq.topic_prefix == "kv@"
    error_message = "the default topic prefix kv@ is accepted"
  }
}

run "snapshots_on_a_volume_and_bootstrap_from_replicas" {
  command = plan
  variables {
    replicas = 2
    snapshot = { interval = "2m", keep = 2, size_limit = "1Gi", bootstrap_from_replicas = true }
  }

  assert {
    condition = yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"]).snapshot == {
      dir            = "/var/lib/celld/snapshots"
      interval       = "2m"
      keep           = 2
      bootstrap_from = "cell-a.default.svc.cluster.local:9090"
    }
    error_message = "the snapshot section names the volume's directory, the settings given and the cell's own gRPC Service to bootstrap from"
  }
  assert {
    condition = (one([for m in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].container[0].volume_mount : m.mount_path if m.name == "snapshots"]) == "/var/lib/celld/snapshots"
    && one([for v in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].volume : v.empty_dir[0].size_limit if v.name == "snapshots"]) == "1Gi")
    error_message = "snapshots live on a size-limited emptyDir mounted where the config says"
  }
}

run "no_snapshots_by_default" {
  command = plan

  assert {
    condition = (!contains(keys(yamldecode(kubernetes_config_map_v1.celld.data["celld.yaml"])), "snapshot")
    && length([for v in kubernetes_deployment_v1.celld.spec[0].template[0].spec[0].volume : v if v.name == "snapshots"]) == 0)
    error_message = "without var.snapshot, no snapshot section and no volume"
  }
}
