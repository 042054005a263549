package global

// globalStatusContent is globald's status page (statuspage.New): the
// cells with their replicas, models, summaries, load, probes and hit
// rates. It is executed with a *globalStatus.
const globalStatusContent = `{{define "content"}}
<h2 id="cells">Cells</h2>
<p class="meta"><span class="ok">{{.Alive}} alive</span>{{if .Draining}} · <span class="warn">{{.Draining}} draining</span>{{end}}{{if .Dead}} · <span class="bad">{{.Dead}} dead</span>{{end}} · {{.Endpoints}} endpoints</p>
{{if .Cells}}<table id="cells-table"><thead><tr><th>cell</th><th>state</th><th>replicas (endpoints)</th><th>models</th>
<th>summary<br>generation · age · size · est. false positives</th><th>load (gossiped, with hand-offs since)<br>requests / active blocks / free blocks · pods</th><th>saturation</th>
<th>probes<br>sent / failed · mean RTT · last RTT</th><th>hand-offs</th><th>cache hits<br>predicted / realised</th></tr></thead><tbody>
{{- range .Cells}}
<tr><td class="cell-id"><code>{{.ID}}</code></td><td class="{{.Class}}">{{.State}}</td>
<td>{{range .Endpoints}}<div><code>{{.Name}}</code>: http <code>{{.HTTPAddr}}</code>, grpc <code>{{.GRPCAddr}}</code></div>{{else}}-{{end}}</td>
<td>{{if lt .ModelCount 0}}not listed{{else}}{{.ModelCount}}{{range .Models}} · <code>{{.}}</code>{{end}}{{end}}</td>
<td>{{if .HasSummary}}gen {{.SummaryGen}} · {{duration .SummaryAge}} · {{bytes .SummaryBytes}} · {{rate .FPRate}}{{else}}<span class="warn">none yet</span>{{end}}</td>
<td class="n">{{.Load.ActiveRequests}} / {{count .Load.ActiveBlocks}} / {{count .Load.FreeBlocks}} · {{.Load.Pods}}</td>
<td><meter min="0" max="1" value="{{meterval .Saturation}}"></meter> {{percent .Saturation}}</td>
<td class="n">{{.Stats.Probes}} / {{if .Stats.ProbeErrors}}<span class="warn">{{.Stats.ProbeErrors}}</span>{{else}}0{{end}} · {{if .MeanRTT}}{{duration .MeanRTT}} · {{duration .Stats.LastRTT}}{{else}}-{{end}}</td>
<td class="n">{{count .Stats.Handoffs}}</td>
<td class="n">{{percent .Predicted}} / {{percent .Realised}}</td></tr>
{{- end}}
</tbody></table>{{else}}<p class="note">No cell has joined yet.</p>{{end}}

<h2 id="hits">Cache hits</h2>
<dl class="kv">
<dt>prompt tokens served</dt><dd>{{count .PromptTokens}}</dd>
<dt>predicted by the probes</dt><dd><meter min="0" max="1" value="{{meterval .Predicted}}"></meter> {{percent .Predicted}} ({{count .PredictedTokens}} tokens)</dd>
<dt>realised by the pods</dt><dd><meter min="0" max="1" value="{{meterval .Realised}}"></meter> {{percent .Realised}} ({{count .RealisedTokens}} tokens)</dd>
</dl>
{{end}}`
