// Package flowcontrol is a cell's admission control between Pick and
// Execute: when every pod a request may go to is saturated, the request
// waits in a bounded queue instead of piling onto the engines' own
// queues, where nobody decides who waits; it leaves the queue in an order
// that is strict between priority bands and fair between tenants within
// a band, and is re-picked when it leaves, since the cache and the load
// moved while it waited.
//
// # Saturation
//
// The controller asks a Saturation whether a pod can take another request
// now. The cell's answer (cell/run_flowcontrol.go) uses the load it
// already knows: the router's own requests and active blocks on the pod
// (cell/load), corrected by the engine's metrics when they are fresh
// (cell/enginemetrics); a pod is saturated when its engine has
// queue_depth_threshold requests waiting, or its active blocks reach
// active_blocks_threshold of its KV capacity, or the router has
// max_inflight_per_pod requests on it. A request waits while all of its
// decision's acceptable pods (the pipeline's order, after its filters)
// are saturated; it is admitted at once when none of its band or above
// waits and one of them has room, and goes to the best of them with room
// (Grant.Place), not into a saturated pick's engine queue.
//
// Without fresh engine metrics the cell judges an engine from its own
// requests, and with Config.EngineMaxRunning (vLLM's max_num_seqs) it
// estimates the engine as a real one behaves: the requests beyond the
// running batch wait in the engine's queue (against queue_depth_threshold)
// and hold no KV blocks, so only the running share of the router's blocks
// counts against active_blocks_threshold. Counting every routed block as
// held, as the cell does when the batch size is unknown, saturates a pod
// serving long prompts while its engine still has free slots: on the
// conversation trace at twice the compare fleet's capacity (loadtest
// compare --sample 4 --rate 2) the pods' running slots were a fifth idle
// while the cell held requests back, and only the cache-aware modes were
// held (round-robin's requests carry no blocks).
//
// # Order
//
// Queue is the pure decision core: no lock, clock or goroutine. Between
// bands (auth.Priority: critical, standard, sheddable) the order is
// strict: no request leaves while one of a higher band that could go
// waits. Within a band each tenant has a virtual token counter, in the
// spirit of the Virtual Token Counter (VTC, Sheng et al., "Fairness in
// Serving Large Language Models", OSDI 2024): a request is charged its
// prompt and expected output tokens over its tenant's weight when it is
// admitted, and corrected to its real usage when it ends; the next
// request is the head of the waiting tenant with the least counter. A
// tenant that starts waiting is lifted to the least counter of the
// tenants already waiting (or the band's last served counter), so idling
// banks no credit with which to starve the others later. With every
// tenant backlogged, two tenants' served tokens over their weights differ
// by at most one request's cost over the least weight
// (TestQueueFairnessBound), so the shares converge to the weights. Within a tenant the
// order is first come, first served, but for cache affinity (below).
//
// Between tenants the order never looks at prefixes: a request whose
// prefix is hot on an idle pod waits its tenant's turn like any other
// (TestQueueHotPrefixDoesNotSkip, TestAffinityKeepsTenantShares).
// Pods only decide eligibility: a head whose pods are all saturated is
// passed over for the next tenant's, which keeps the queue working when
// the cell serves several models on different pods. Each dispatch
// claims the pod it found room on until the request has been re-picked
// and its load recorded (Grant.StartedOn): a claimed pod takes no other
// dispatch meanwhile, so one freed slot does not release the whole
// queue, while pods that free together fill at once (earlier, one
// dispatch at a time for the whole cell made every request past capacity
// wait for the re-picks before it). The queue moves whenever a request
// ends and every recheck_interval (Run), as the engines' metrics change
// between requests.
//
// # Cache affinity
//
// A request that waits is waiting because the pods it would go to are
// full, and the pod that frees up first is rarely the one that holds its
// prefix. First come, first served would hand that pod to the oldest
// request, which then prefills its whole prefix again beside the pod
// that holds it: under saturation, the queue undid the cache-aware pick
// (on the conversation trace at eight times its rate, flow control sent
// 0.14 of the prompt tokens away from their prefix where sending at once
// sent 0.06; loadtest compare's reuse_loss). So each request carries its
// detours (Request.Detours: for each of its pods, the prefix blocks its
// pick holds that the pod does not), and when a pod frees up the queue
// looks at the first Config.AffinityLookahead requests of the tenant it
// serves and dispatches the one whose pod with room costs it the least,
// the earliest on a tie (Queue.NextBest): a request whose prefix is on
// the freed pod goes before an older one that would recompute its own
// there, and a request whose prefix nobody holds goes wherever there is
// room. This is best fit, not a wait: the freed pod never idles while a
// request could use it. Tenants' shares are untouched (the tenant is
// chosen first, as above). A request passed over for a later one counts
// a pass, and after Config.AffinityMaxPasses it goes first to any pod
// with room; a bound in dispatches rather than time keeps affinity when
// the queue is long, which is when the prefill it saves matters most
// (TestAffinityGivesAFreedPodToItsHolder, TestAffinityPassesAreBounded,
// TestAffinityLookaheadOneIsFIFO; TestQueueAgainstModel checks NextBest
// and the passes against a naive model).
//
// The first lookahead requests are not enough past capacity: there the
// queue holds hundreds, a follow-up whose prefix a pod holds joins at
// the back, and by the time it reaches the look that pod has served the
// queue in front of it and evicted the prefix. So a waiting request is
// also listed under each pod that holds its prefix as deeply as its pick
// (Queue.Hold), as is a follower under its leader's pod once the leader
// started, and when nothing in the look scores at or below 0 (nothing
// there loses nothing on the freed pod), a pod with room takes the
// oldest of its holders from anywhere in the tenant's queue
// (queue_holders.go). Serving cached prefixes first is also shortest
// prefill first. A lookahead of 1 keeps first come, first served. On the
// conversation trace at twice the compare fleet's capacity this took kv
// from 0.61-0.66 of the reachable reuse to 1.2, and its TTFT p50 from
// 4.9-5.0 s to 4.2 s (TestFreedPodTakesItsHolderFromBeyondTheLookahead,
// TestReleasedFollowerIsItsLeadersPodsHolder, BenchmarkDispatchHolders).
//
// # Affinity wait
//
// Best fit alone still sends a request away from its prefix whenever its
// pick is saturated and another pod has room: at once on arrival, or as
// soon as any pod frees. With Config.AffinityWait a pod is open to a
// request only once the request has waited as long as the pod's detour
// would take to prefill (Request.Detours x Config.PrefillPerBlock, which
// the cell takes from routing.cost): the ski-rental rule. Waiting longer
// for the pick than the prefill it saves loses more than it gains;
// waiting less never loses more than twice the better of the two. The
// pick, a pod holding all its pick holds, and every pod of a request
// whose prefix nobody holds are open at once, so such a request still
// takes a freed pod at once (TestAffinityWaitFreedPodTakesAnOpenRequest).
// The re-pick's placement applies the same rule with the re-pick's own
// detours (Grant.Place).
//
// Waits fill the look: past capacity its first requests are often all
// waiting for other pods (their affinity waits, followers for their
// leaders or their leaders' pods). A pod with room then takes, of the
// next lookahead requests, one that loses nothing there (a score at or
// below Lossless: no prefix anywhere, or its prefix there) rather than
// idle; nothing that would lose a prefix is taken from beyond the look,
// and the bound keeps the reordering short (NextBest;
// TestFreedPodTakesALosslessRequestBeyondALookThatWaits,
// BenchmarkDispatchFallback). Without it, the longer follow wait below
// left pods idle at eight times the cold workload's rate (161 requests/s
// against 220-250).
//
// # Following
//
// A conversation's next turn often arrives while the turn before it still
// waits in the queue, its prefix on no pod yet: its decision matched only
// what the pods held before, and a freed pod would take it at once, away
// from where its prefix is about to be computed. The cell finds the
// waiting request whose prompt a new one extends (a sampled index of the
// waiting prompts' blocks, cell/run_flowcontrol_follow.go) and names it
// (Request.Follows); the follower waits until its leader has started
// (Grant.StartedOn), and then goes to the leader's pod at once and to any
// other only after the leader's prefill of the blocks it shares with the
// leader and the ski-rental wait of them after it (follow.go: waiting
// through the leader's prefill costs it nothing, since leaving computes
// them again in the same time). A leader that leaves without starting frees its
// followers. Once its leader started, a follower costs any other pod the
// blocks it shares with the leader (its own decision, made before, knew
// nothing of them), so a freed pod takes a request that loses nothing
// there first; it is listed as the leader's pod's holder (below), and its
// placement goes to the leader's pod while that has room (Grant.LeaderPod),
// even when the re-pick's load filters, which count blocks flow control
// does not, left the pod out (on the cold workload at eight times its
// rate a third of the followers landed away from their leader's pod
// before this, 0.76-0.80 of the reachable reuse against 0.93 after).
// The cell indexes a request's prompt when it joins the queue
// (Request.Queued, called without the lock), so that a turn that found
// the queue empty still leads the turns behind it.
//
// # Headroom
//
// Order alone cannot keep a quiet tenant's time to first token: the
// engines do not pre-empt, so when a noisy tenant under its caps has
// filled every slot, the quiet tenant's request, first in line, still
// waits for one of the noisy requests to end (hundreds of milliseconds
// for long prompts). So the controller keeps headroom (Config.Headroom,
// a quarter of each limit by default; headroom.go): while another active
// tenant of the band is under its share of the band's requests in flight
// (its weight's part; a tenant is active while it has requests in flight
// or queued and for active_window after its last one) and not backlogged
// (a backlog is the counters' to order), or while a higher band is
// active, a request of a tenant at or over its share is admitted
// only to a pod below its limits less the headroom (Saturation is asked
// with that reserve; ReservedLimit rounds so a limit of two or more keeps
// a slot). It goes to the best of its pods with such room (Grant.Place),
// else waits; the room above is left for the others. This departs from
// a work-conserving queue on purpose, in the spirit of the seats that
// Kubernetes' API Priority and Fairness holds for each level: a tenant
// alone, or tenants at their shares, use every slot, and the cost is the
// headroom left idle while an active tenant under its share sends
// nothing at the moment (TestHeadroomKeepsASlotForTheQuietTenant,
// TestHeadroomCostsNothingWhenSharesAreMet, TestHeadroomAlone,
// TestHeadroomForHigherBands; the loadtest's fairness command measures
// the quiet tenant's p99 with and without it).
//
// # Deadlines and shedding
//
// A request waits at most the least of default_deadline, its tenant's
// max_queue_wait and its client's own bound (TimeoutHeader, or the
// context's deadline); past it the answer is 429 with Retry-After (the
// wait a new request of its band would have now, at least a second) in
// OpenAI's error shape. A client that goes away leaves the queue at once.
// A full queue (max_queued) makes room by shedding the newest request of
// the most-served tenant of the lowest band below the arrival's; with
// nothing below, the arrival itself is refused. And a request whose
// deadline (the cell's or its tenant's) passes first sheds every waiting
// request of a lower band (which would have been served after it
// anyway), so no request is ever refused while one of a lower band
// waits: in particular no critical request is shed while a sheddable one
// is queued (Stats counts any that were, and the tests hold it at zero).
// A client whose own, shorter bound passes leaves like one that
// disconnects (outcome client_deadline, still a 429) and sheds nobody, so
// a client cannot flush the lower bands by sending short timeouts. Every queued request leaves
// exactly once: dispatched, expired, shed, cancelled or closed; the one
// that takes it out of the queue, under the lock, owns its answer.
//
// # Wait estimate
//
// WaitEstimate(band) is what the cell gossips to the global tier: the
// requests waiting at the band or above, plus one, times the recent mean
// interval between dispatches (or the time since the last one, when that
// is longer), capped at default_deadline; 0 when none waits.
//
// # On by default
//
// flow_control.enabled defaults to true. It acts only on evidence: while
// no pod is known to be saturated every request is admitted at once, at a
// cost of about a microsecond and one allocation
// (BenchmarkControllerAdmit), and without engine metrics, kv_blocks or
// max_inflight_per_pod nothing is ever judged saturated. Off, a saturated
// fleet queues in the engines, first come first served, where a noisy
// tenant pushes everyone's time to first token (the loadtest's
// comparison, and TestFlowNoisyTenantDoesNotPushQuiet, measure both).
// --flow-control=false turns it off, for that comparison or for a cell
// whose engines do their own fair scheduling.
package flowcontrol
