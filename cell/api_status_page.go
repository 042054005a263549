package cell

// cellStatusContent is the cell's status page (statuspage.New): its pods
// with their state, load and blocks, the index, the KV events and the hit
// rates. It is executed with a *cellStatus.
const cellStatusContent = `{{define "content"}}
<h2 id="pods">Pods</h2>
<p class="meta">{{range .ByState}}{{if .Count}}<span class="{{.Class}}">{{.Count}} {{.Name}}</span> · {{end}}{{end}}{{len .Pods}} in all</p>
{{if .Pods}}<table id="pods-table"><thead><tr><th>pod</th><th>address</th><th>role</th><th>state</th><th>last event</th>
<th>router load<br>requests / blocks</th><th>engine load<br>running / waiting / KV use</th>
<th>engine blocks</th><th>indexed blocks<br>GPU / CPU / storage</th></tr></thead><tbody>
{{- range .Pods}}
<tr><td class="pod-id"><code>{{.Id}}</code></td><td>{{if .Address}}<code>{{.Address}}</code>{{else}}-{{end}}</td>
<td>{{.Role}}</td><td class="{{.Class}}">{{.StateName}}</td><td>{{age $.Now .LastEvent}}</td>
<td class="n">{{.Requests}} / {{count .Blocks}}</td>
<td class="n">{{with .Engine}}{{if .Fresh}}{{.Running}} / {{.Waiting}} / {{percent .KvUsage}}{{else}}<span class="warn">stale{{if .Error}}: {{.Error}}{{end}}</span>{{end}}{{else}}-{{end}}</td>
<td class="n">{{count .EngineBlocks}}</td><td class="n">{{count .Tiers.GPU}} / {{count .Tiers.CPU}} / {{count .Tiers.Storage}}</td></tr>
{{- end}}
</tbody></table>{{else}}<p class="note">No pods yet.</p>{{end}}
{{with .State.RefusedPods}}<p class="warn">Pods refused:</p><ul>{{range .}}<li><code>{{.Id}}</code> ({{.Source}}): {{.Reason}}</li>{{end}}</ul>{{end}}

<h2 id="index">Index and hit rates</h2>
<dl class="kv">
<dt>indexed router blocks</dt><dd>{{count .State.IndexedRouterBlocks}} (GPU {{count .Tiers.GPU}}, CPU {{count .Tiers.CPU}}, storage {{count .Tiers.Storage}}, by pod)</dd>
<dt>prompt tokens served</dt><dd>{{count .Hits.PromptTokens}}</dd>
<dt>predicted cache hits</dt><dd><meter min="0" max="1" value="{{meterval .Hits.Predicted}}"></meter> {{percent .Hits.Predicted}} ({{count .Hits.PredictedTokens}} tokens)</dd>
<dt>realised cache hits</dt><dd><meter min="0" max="1" value="{{meterval .Hits.Realised}}"></meter> {{percent .Hits.Realised}} ({{count .Hits.RealisedTokens}} tokens the pods reported cached)</dd>
<dt>blocks evicted</dt><dd>{{count .State.BlocksEvicted}}{{range .Evicted}} · {{.Reason}} {{count .N}}{{end}}</dd>
</dl>

<h2 id="events">KV events</h2>
<dl class="kv">
<dt>events applied</dt><dd>{{count .State.EventsApplied}} (duplicates ignored {{count .State.DuplicatesIgnored}})</dd>
<dt>lag (apply − engine time)</dt><dd>{{if .Lag.Batches}}mean {{duration .Lag.Mean}}, p99 {{.Lag.P99}} over {{count .Lag.Batches}} batches{{if .Lag.Negative}} ({{.Lag.Negative}} from clocks ahead){{end}}{{else}}no batches yet{{end}}</dd>
<dt>dropped</dt><dd>{{if or .State.EventsDropped .State.TransportDropped}}<span class="warn">{{count .State.EventsDropped}} events, {{count .State.TransportDropped}} before the applier</span>{{else}}<span class="ok">none</span>{{end}}</dd>
</dl>
{{if .Drops}}<table id="drops-table"><thead><tr><th>drop reason</th><th>count</th></tr></thead><tbody>
{{- range .Drops}}<tr><td>{{.Reason}}</td><td class="n">{{count .N}}</td></tr>{{end}}
</tbody></table>{{end}}
{{if .State.EngineMetricsStale}}<p class="warn">{{.State.EngineMetricsStale}} pods' engine metrics are stale.</p>{{end}}
{{end}}`
