# The celld configuration, rendered from the typed variables. Only what is
# set is written, so everything else keeps celld's documented defaults
# (cell/testdata/celld.example.yaml). CI feeds this YAML to
# `celld --check-config` (deploy/terraform/check.sh).

locals {
  cell_id = coalesce(var.cell_id, var.name)

  engine_service = "${var.name}-engine"
  engine_block   = coalesce(var.events.block_size, 16)
  engine_ports   = { http = 8000, zmq = 8001, replay = 8002 }
  engine_pods = var.demo_engines == null ? [] : [
    for i in range(var.demo_engines.count) : {
      host  = "${local.engine_service}-${i}.${local.engine_service}.${var.namespace}.svc.${var.cluster_domain}"
      id    = "${local.engine_service}-${i}"
      model = var.demo_engines.model
    }
  ]

  # The demo engines' pods, as discovery selects them.
  engine_selector_text = "app.kubernetes.io/name=enginesim,app.kubernetes.io/instance=${var.name}"

  # What the cell discovers (celld discovery.kubernetes): in-cluster
  # credentials, the pod's own namespace unless another is named, and the
  # demo engines when no selector or pool is named.
  discovery = var.discovery == null ? null : merge(
    { enabled = true, kubeconfig = "" },
    var.discovery.namespace == "" ? {} : { namespace = var.discovery.namespace },
    var.discovery.inference_pool != "" ? { inference_pool = var.discovery.inference_pool } : {
      selector                                            = var.discovery.selector != "" ? var.discovery.selector : local.engine_selector_text
    },
    var.discovery.inference_pool != "" ? {} : { target_port = var.discovery.target_port },
    { zmq_port = var.discovery.zmq_port, replay_port = var.discovery.replay_port },
  )

  # Every pod the cell is configured with: the operator's, then the demo's
  # (unless discovery finds them).
  pods = concat(
    [for p in var.pods : { for k, v in p : k => v if v != null }],
    [for e in(var.discovery == null ? local.engine_pods : []) : {
      id              = e.id
      address         = "${e.host}:${local.engine_ports.http}"
      role            = "both"
      model           = e.model
      zmq_endpoint    = "tcp://${e.host}:${local.engine_ports.zmq}"
      replay_endpoint = "tcp://${e.host}:${local.engine_ports.replay}"
      kv_blocks       = var.demo_engines.blocks
    }],
  )

  # nats.durable left unset: celld derives celld-<cell_id>-<replica id>,
  # one durable consumer per replica.
  nats = var.nats == null ? null : { for k, v in var.nats : k => v if v != null }

  zmq = merge(
    var.zmq.bind_port == null ? {} : { bind = "tcp://0.0.0.0:${var.zmq.bind_port}" },
    { for k, v in var.zmq : k => v if v != null && k != "bind_port" },
  )

  routing = merge(
    { for k, v in var.routing : k => v if v != null && k != "profiles_yaml" },
    var.routing.profiles_yaml == null ? {} : { profiles = yamldecode(var.routing.profiles_yaml) },
  )

  # celld binds gossip on every interface; the address the pool is told is
  # the advertised one: advertise_address when set (in the config), else
  # the pod IP (celld --gossip-advertise, see deployment.tf).
  gossip = var.gossip == null ? null : merge(
    { bind = ":${var.gossip.port}", seeds = var.gossip.seeds },
    var.gossip.advertise_address == null ? {} : { advertise = "${var.gossip.advertise_address}:${var.gossip.port}" },
    { for k, v in var.gossip : k => v if v != null && contains(["summary_interval", "stride", "false_positive_rate", "probe_interval", "probe_timeout"], k) },
    try(var.epp.gateway_address, null) == null ? {} : { gateway_address = var.epp.gateway_address },
  )

  snapshot_dir = "/var/lib/celld/snapshots"
  snapshot = var.snapshot == null ? null : merge(
    { dir = local.snapshot_dir },
    { for k, v in var.snapshot : k => v if v != null && contains(["interval", "every_events", "keep"], k) },
    var.snapshot.bootstrap_from_replicas ? { bootstrap_from = "${var.name}.${var.namespace}.svc.${var.cluster_domain}:${var.ports.grpc}" } : {},
  )

  config = merge(
    {
      cell_id = local.cell_id
      # Every interface: kubelet probes the pod IP, port-forward dials
      # localhost, and the gossip pool is told the advertised host.
      http_addr = ":${var.ports.http}"
      grpc_addr = ":${var.ports.grpc}"
    },
    var.epp == null ? {} : { epp_addr = ":${var.epp.port}" },
    length(local.pods) == 0 ? {} : { pods = local.pods },
    { for k, v in {
      index   = { for k, v in var.index : k => v if v != null }
      events  = { for k, v in var.events : k => v if v != null }
      zmq     = local.zmq
      routing = local.routing
    } : k => v if length(v) > 0 },
    local.discovery == null ? {} : { discovery = { kubernetes = local.discovery } },
    length(local.auth) == 0 ? {} : { auth = local.auth },
    length(local.tls) == 0 ? {} : { tls = local.tls },
    local.nats == null ? {} : { nats = local.nats },
    local.gossip == null ? {} : { gossip = local.gossip },
    local.snapshot == null ? {} : { snapshot = local.snapshot },
    { for k, v in var.timings : k => v if v != null },
  )

  config_yaml = yamlencode(local.config)
}
