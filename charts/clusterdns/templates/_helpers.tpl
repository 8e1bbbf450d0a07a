{{/* vim: set filetype=mustache: */}}

{{/* Chart name, 63-char limit. */}}
{{- define "clusterdns.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name, 63-char limit (DNS label). */}}
{{- define "clusterdns.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "clusterdns.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Value of the k8s-app label: kube-dns unless overridden. */}}
{{- define "clusterdns.k8sapplabel" -}}
{{- default "kube-dns" .Values.k8sAppLabelOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clusterdns.deploymentName" -}}
{{- default (include "clusterdns.fullname" .) .Values.deployment.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clusterdns.serviceName" -}}
{{- default "kube-dns" .Values.service.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clusterdns.configmapName" -}}
{{- default "coredns" .Values.configmap.name | trunc 253 -}}
{{- end -}}

{{/* Common labels (YAML map). Every object gets these plus customLabels. */}}
{{- define "clusterdns.labels" -}}
app.kubernetes.io/name: {{ include "clusterdns.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/part-of: clusterdns
helm.sh/chart: {{ include "clusterdns.chart" . | quote }}
{{- if .Values.isClusterService }}
k8s-app: {{ include "clusterdns.k8sapplabel" . | quote }}
kubernetes.io/cluster-service: "true"
kubernetes.io/name: "CoreDNS"
{{- end }}
{{- with .Values.customLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Labels that select the pods (YAML map): the default selector of the Deployment, and the selector
of the Services, the PDB and the anti-affinity preset. Every pod carries them. The matchLabels of
deployment.selector take precedence, so adopting an existing Deployment whose immutable selector
has other values (e.g. app.kubernetes.io/name: coredns from the coredns chart) keeps the pods,
Services and PDB consistent with it.
*/}}
{{- define "clusterdns.selectorLabels" -}}
{{- $labels := dict "app.kubernetes.io/name" (include "clusterdns.name" .) "app.kubernetes.io/instance" .Release.Name -}}
{{- if .Values.isClusterService -}}
{{- $_ := set $labels "k8s-app" (include "clusterdns.k8sapplabel" .) -}}
{{- end -}}
{{- $selector := default dict .Values.deployment.selector -}}
{{- toYaml (merge (deepCopy (default dict $selector.matchLabels)) $labels) -}}
{{- end -}}

{{/*
The Deployment's spec.selector (YAML map): deployment.selector, a LabelSelector as in the coredns
chart, or matchLabels of the selector labels.
*/}}
{{- define "clusterdns.deploymentSelector" -}}
{{- if .Values.deployment.selector -}}
{{ toYaml .Values.deployment.selector }}
{{- else -}}
matchLabels:
  {{- include "clusterdns.selectorLabels" . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
Pod labels (YAML map): the selector labels (with deployment.selector.matchLabels, so a custom
selector always matches), the common labels and podLabels.
*/}}
{{- define "clusterdns.podLabels" -}}
{{- $labels := merge (include "clusterdns.selectorLabels" . | fromYaml) (include "clusterdns.labels" . | fromYaml) (default dict .Values.podLabels) -}}
{{- toYaml $labels -}}
{{- end -}}

{{/* imagePullSecrets entries (YAML list) from a pullSecrets value: [{name: x}] or [x]. */}}
{{- define "clusterdns.pullSecrets" -}}
{{- $out := list -}}
{{- range . -}}
{{- if kindIs "string" . -}}{{- $out = append $out (dict "name" .) -}}{{- else -}}{{- $out = append $out . -}}{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Annotations every object gets (YAML map, may be empty). */}}
{{- define "clusterdns.customAnnotations" -}}
{{- with .Values.customAnnotations }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- define "clusterdns.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "clusterdns.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{- define "clusterdns.clusterRoleName" -}}
{{- default "system:clusterdns" .Values.clusterRole.nameOverride -}}
{{- end -}}

{{- define "clusterdns.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{/*
The port number of an address parameter like "0.0.0.0:9153", ":9153", "[::]:9153" or "".
Call with (list parameters defaultPort).
*/}}
{{- define "clusterdns.addrPort" -}}
{{- $params := trim (toString (index . 0)) -}}
{{- $default := index . 1 -}}
{{- $port := regexFind ":[0-9]+$" (first (splitList " " $params)) | trimPrefix ":" -}}
{{- default $default $port -}}
{{- end -}}

{{/*
Find a plugin across the server blocks. Returns a JSON object {"found":bool,"port":N} where the
port is read from the plugin's first parameter. Call with (list $ "pluginName" defaultPort).
*/}}
{{- define "clusterdns.pluginPort" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $default := index . 2 -}}
{{- $result := dict "found" false "port" $default -}}
{{- range $root.Values.servers -}}
{{- range .plugins -}}
{{- if and (eq .name $name) (not $result.found) -}}
{{- $host := regexReplaceAll ":[0-9]*$" (first (splitList " " (trim (toString (default "" .parameters))))) "" -}}
{{- if has $host (list "localhost" "127.0.0.1" "[::1]" "::1") -}}
{{- fail (printf "the %s plugin listens on %s: the kubelet cannot reach it there, so its probe would always fail" $name (toString .parameters)) -}}
{{- end -}}
{{- $_ := set $result "found" true -}}
{{- $_ := set $result "port" (include "clusterdns.addrPort" (list (default "" .parameters) (toString $default)) | int) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $result -}}
{{- end -}}

{{/*
Collect the DNS ports from servers[] (like coredns.servicePorts/containerPorts): a JSON map
port -> {udp, tcp, servicePort, nodePort, hostPort}. dns:// (or no scheme) serves UDP, and TCP
too when use_tcp is true; tls://, https:// and grpc:// serve TCP. A block whose zones name no
protocol serves UDP and TCP.
*/}}
{{- define "clusterdns.dnsPorts" -}}
{{- $ports := dict -}}
{{- range .Values.servers -}}
{{- $port := toString (default 53 .port) -}}
{{- if not (hasKey $ports $port) -}}
{{- $_ := set $ports $port (dict "udp" false "tcp" false "servicePort" (int (default .port .servicePort)) "nodePort" 0 "hostPort" 0) -}}
{{- end -}}
{{- $p := index $ports $port -}}
{{- $anyProto := false -}}
{{- range .zones -}}
{{- $scheme := default "" .scheme -}}
{{- if has $scheme (list "" "dns://") -}}
{{- $_ := set $p "udp" true -}}
{{- $anyProto = true -}}
{{- if .use_tcp -}}{{- $_ := set $p "tcp" true -}}{{- end -}}
{{- else if has $scheme (list "tls://" "https://" "grpc://") -}}
{{- $_ := set $p "tcp" true -}}
{{- $anyProto = true -}}
{{- end -}}
{{- end -}}
{{- if not $anyProto -}}
{{- $_ := set $p "udp" true -}}
{{- $_ := set $p "tcp" true -}}
{{- end -}}
{{- if .nodePort -}}{{- $_ := set $p "nodePort" (int .nodePort) -}}{{- end -}}
{{- if .hostPort -}}{{- $_ := set $p "hostPort" (int .hostPort) -}}{{- end -}}
{{- end -}}
{{- toJson $ports -}}
{{- end -}}

{{/* Prometheus ports (TCP) from the prometheus plugin of every block: JSON list of ints. */}}
{{- define "clusterdns.metricsPorts" -}}
{{- $out := list -}}
{{- range .Values.servers -}}
{{- range .plugins -}}
{{- if eq .name "prometheus" -}}
{{- $p := include "clusterdns.addrPort" (list (default "" .parameters) "9153") | int -}}
{{- if not (has $p $out) -}}{{- $out = append $out $p -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
Port names, as the coredns chart generates them: udp-N and tcp-N for DNS ports and tcp-N for the
prometheus port of the container; on Services the metrics port is named metrics (metrics-N for a
second one), the name the ServiceMonitor and the coredns chart's metrics Service use.
*/}}
{{- define "clusterdns.portName" -}}
{{- $kind := index . 0 -}}
{{- $port := toString (index . 1) -}}
{{- $first := index . 2 -}}
{{- if eq $kind "udp" -}}udp-{{ $port }}
{{- else if eq $kind "tcp" -}}tcp-{{ $port }}
{{- else -}}{{ if $first }}metrics{{ else }}metrics-{{ $port }}{{ end }}
{{- end -}}
{{- end -}}

{{/* Service ports (YAML list). */}}
{{- define "clusterdns.servicePorts" -}}
{{- $ports := include "clusterdns.dnsPorts" . | fromJson -}}
{{- $list := list -}}
{{- range $port, $p := $ports -}}
{{- range $proto := list "udp" "tcp" -}}
{{- if index $p $proto -}}
{{- $e := dict "name" (include "clusterdns.portName" (list $proto $port false)) "port" (int $p.servicePort) "protocol" (upper $proto) "targetPort" (int $port) -}}
{{- if $p.nodePort -}}{{- $_ := set $e "nodePort" (int $p.nodePort) -}}{{- end -}}
{{- $list = append $list $e -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $i, $port := include "clusterdns.metricsPorts" . | fromJsonArray -}}
{{- $list = append $list (dict "name" (include "clusterdns.portName" (list "metrics" $port (eq $i 0))) "port" (int $port) "protocol" "TCP" "targetPort" (int $port)) -}}
{{- end -}}
{{- toYaml $list -}}
{{- end -}}

{{/* Container ports (YAML list), including the probe ports named as kubeadm names them. */}}
{{- define "clusterdns.containerPorts" -}}
{{- $ports := include "clusterdns.dnsPorts" . | fromJson -}}
{{- $list := list -}}
{{- range $port, $p := $ports -}}
{{- range $proto := list "udp" "tcp" -}}
{{- if index $p $proto -}}
{{- $e := dict "name" (include "clusterdns.portName" (list $proto $port false)) "containerPort" (int $port) "protocol" (upper $proto) -}}
{{- if $p.hostPort -}}{{- $_ := set $e "hostPort" (int $p.hostPort) -}}{{- end -}}
{{- $list = append $list $e -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $port := include "clusterdns.metricsPorts" . | fromJsonArray -}}
{{- $dns := get $ports (toString $port) -}}
{{- if not (and $dns $dns.tcp) -}}
{{- $list = append $list (dict "name" (include "clusterdns.portName" (list "tcp" $port false)) "containerPort" (int $port) "protocol" "TCP") -}}
{{- end -}}
{{- end -}}
{{- $health := include "clusterdns.pluginPort" (list . "health" 8080) | fromJson -}}
{{- if $health.found -}}
{{- $list = append $list (dict "name" "liveness-probe" "containerPort" (int $health.port) "protocol" "TCP") -}}
{{- end -}}
{{- $ready := include "clusterdns.pluginPort" (list . "ready" 8181) | fromJson -}}
{{- if $ready.found -}}
{{- $list = append $list (dict "name" "readiness-probe" "containerPort" (int $ready.port) "protocol" "TCP") -}}
{{- end -}}
{{- toYaml $list -}}
{{- end -}}

{{/*
The pod's securityContext: podSecurityContext, plus (lowPorts: sysctl) the namespaced sysctl
net.ipv4.ip_unprivileged_port_start set to the lowest container port when one is below 1024, so
that the container binds 53 without any capability (the image's node has no file capability:
glibc then honours MALLOC_ARENA_MAX). An operator's own value of that sysctl is kept.
*/}}
{{- define "clusterdns.podSecurityContext" -}}
{{- $ctx := deepCopy (default dict .Values.podSecurityContext) -}}
{{- $low := 65536 -}}
{{- range include "clusterdns.containerPorts" . | fromYamlArray -}}
{{- if lt (int .containerPort) $low -}}{{- $low = int .containerPort -}}{{- end -}}
{{- end -}}
{{- $sysctl := "net.ipv4.ip_unprivileged_port_start" -}}
{{- if lt $low 1024 -}}
{{- if eq (toString .Values.lowPorts) "sysctl" -}}
{{- $sysctls := default list $ctx.sysctls -}}
{{- $set := false -}}
{{- range $sysctls -}}{{- if eq .name $sysctl -}}{{- $set = true -}}{{- end -}}{{- end -}}
{{- if not $set -}}
{{- $sysctls = append $sysctls (dict "name" $sysctl "value" (toString $low)) -}}
{{- end -}}
{{- $_ := set $ctx "sysctls" $sysctls -}}
{{- else if ne (int (dig "runAsUser" (dig "runAsUser" 65532 $ctx) (default dict .Values.securityContext))) 0 -}}
{{- fail (printf "port %d is below 1024 and lowPorts is %q: the container (no capability, not root) cannot bind it; use lowPorts: sysctl, or serve on a port of 1024 or above with servicePort (servers[].port: 1053, servicePort: 53)" $low (toString .Values.lowPorts)) -}}
{{- end -}}
{{- end -}}
{{- with $ctx -}}{{- toYaml . -}}{{- end -}}
{{- end -}}

{{/*
Memory quantity -> MiB (integer). Accepts plain bytes, k/M/G/T and Ki/Mi/Gi/Ti suffixes.
*/}}
{{- define "clusterdns.memoryMiB" -}}
{{- $q := toString . -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?$" $q) -}}
{{- fail (printf "resources.limits.memory %q: unsupported quantity (use e.g. 256Mi, 1Gi, 300M or bytes)" $q) -}}
{{- end -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q | float64 -}}
{{- $unit := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" $q "" -}}
{{- $factors := dict "" 1.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 -}}
{{- divf (mulf $num (get $factors $unit)) 1048576.0 | floor | int -}}
{{- end -}}

{{/* NODE_OPTIONS value ("" when there is nothing to set). */}}
{{- define "clusterdns.nodeOptions" -}}
{{- $opts := list -}}
{{- $limits := default dict .Values.resources.limits -}}
{{- if $limits.memory -}}
{{- $mib := include "clusterdns.memoryMiB" $limits.memory | int -}}
{{- /* The main thread's share of what its query threads leave (src/util/heap.ts): each thread is
bounded at 96 MiB. Without clusterdns.workers, as many threads as the limit leaves room for
(src/util/cpus.ts: 1 + (limit - 160) / 96), since the node's CPUs are not known here. */ -}}
{{- $threads := 1 -}}
{{- if and (not (kindIs "invalid" .Values.clusterdns.workers)) (gt (int .Values.clusterdns.workers) 0) -}}
{{- $threads = int .Values.clusterdns.workers -}}
{{- else if gt $mib 160 -}}
{{- $threads = add 1 (div (sub $mib 160) 96) | int -}}
{{- end -}}
{{- $heap := div (mul (sub $mib (mul (sub $threads 1) 96)) (int .Values.nodeOptions.maxOldSpacePercent)) 100 -}}
{{- if lt $heap 32 -}}
{{- fail (printf "resources.limits.memory %v leaves only %dMiB of V8 heap for the main thread with %d query threads of 96MiB (need at least 32MiB; set clusterdns.workers or raise the limit)" $limits.memory $heap $threads) -}}
{{- end -}}
{{- $opts = append $opts (printf "--max-old-space-size=%d" $heap) -}}
{{- end -}}
{{- with .Values.nodeOptions.extra -}}
{{- $opts = append $opts . -}}
{{- end -}}
{{- join " " $opts -}}
{{- end -}}

{{/*
The container's args as a YAML flow list: the Corefile, then the clusterdns-only flags that are
set (clusterdns.workers, clusterdns.tcp.*; null adds nothing, so the server's own default applies).
*/}}
{{- define "clusterdns.args" -}}
{{- $args := list "-conf" "/etc/coredns/Corefile" -}}
{{- if not (kindIs "invalid" .Values.clusterdns.workers) -}}
{{- $args = concat $args (list "-workers" (printf "%d" (int64 .Values.clusterdns.workers))) -}}
{{- end -}}
{{- if not (kindIs "invalid" .Values.clusterdns.tcp.maxConns) -}}
{{- $args = concat $args (list "-dns.tcp.maxconns" (printf "%d" (int64 .Values.clusterdns.tcp.maxConns))) -}}
{{- end -}}
{{- if not (kindIs "invalid" .Values.clusterdns.tcp.maxConnsPerSource) -}}
{{- $args = concat $args (list "-dns.tcp.maxconnspersource" (printf "%d" (int64 .Values.clusterdns.tcp.maxConnsPerSource))) -}}
{{- end -}}
[{{ range $i, $a := $args }}{{ if $i }}, {{ end }}{{ $a | quote }}{{ end }}]
{{- end -}}

{{/*
Lameduck duration of the first health plugin, in whole seconds (rounded up); 0 when none.
*/}}
{{- define "clusterdns.lameduckSeconds" -}}
{{- $secs := 0 -}}
{{- $done := false -}}
{{- range .Values.servers -}}
{{- range .plugins -}}
{{- if and (eq .name "health") (not $done) -}}
{{- $done = true -}}
{{- $m := regexFind "lameduck\\s+[0-9]+(ms|s|m|h)" (default "" .configBlock) -}}
{{- if $m -}}
{{- $d := regexFind "[0-9]+(ms|s|m|h)$" $m -}}
{{- $n := regexFind "^[0-9]+" $d | int -}}
{{- $u := regexReplaceAll "^[0-9]+" $d "" -}}
{{- if eq $u "ms" -}}{{- $secs = div (add $n 999) 1000 -}}
{{- else if eq $u "s" -}}{{- $secs = $n -}}
{{- else if eq $u "m" -}}{{- $secs = mul $n 60 -}}
{{- else -}}{{- $secs = mul $n 3600 -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $secs -}}
{{- end -}}

{{/*
The Corefile rendered from extraConfig, servers[] and stubDomains. Every zone of a block carries
the block's port (the coredns chart writes the port after the last zone only, which leaves the
other zones on the default port).
*/}}
{{- define "clusterdns.corefile" -}}
{{- $blocks := list -}}
{{- range $name, $conf := .Values.extraConfig -}}
{{- $params := "" -}}
{{- if and $conf (kindIs "map" $conf) -}}{{- $params = toString (default "" $conf.parameters) -}}{{- end -}}
{{- $blocks = append $blocks (trim (printf "%s %s" $name $params)) -}}
{{- end -}}
{{- range .Values.servers -}}
{{- $port := .port -}}
{{- $keys := list -}}
{{- range .zones -}}
{{- $k := printf "%s%s" (default "" .scheme) (default "." .zone) -}}
{{- if $port -}}{{- $k = printf "%s:%v" $k $port -}}{{- end -}}
{{- $keys = append $keys $k -}}
{{- end -}}
{{- if not $keys -}}
{{- $keys = list (ternary (printf ".:%v" $port) "." (not (empty $port))) -}}
{{- end -}}
{{- $lines := list (printf "%s {" (join " " $keys)) -}}
{{- range .plugins -}}
{{- $line := printf "    %s" .name -}}
{{- if and (hasKey . "parameters") (not (kindIs "invalid" .parameters)) (ne (toString .parameters) "") -}}
{{- $line = printf "%s %v" $line .parameters -}}
{{- end -}}
{{- if .configBlock -}}
{{- $lines = append $lines (printf "%s {" $line) -}}
{{- range (splitList "\n" (trimSuffix "\n" .configBlock)) -}}
{{- if trim . -}}{{- $lines = append $lines (printf "        %s" (regexReplaceAll "\\s+$" . "")) -}}{{- end -}}
{{- end -}}
{{- $lines = append $lines "    }" -}}
{{- else -}}
{{- $lines = append $lines $line -}}
{{- end -}}
{{- end -}}
{{- $lines = append $lines "}" -}}
{{- $blocks = append $blocks (join "\n" $lines) -}}
{{- end -}}
{{- $stubPort := 53 -}}
{{- with .Values.servers -}}{{- $stubPort = default 53 (first .).port -}}{{- end -}}
{{- range $domain, $servers := .Values.stubDomains -}}
{{- $b := list (printf "%s:%v {" (trimSuffix "." $domain) $stubPort) "    errors" "    cache 30" "    loop" (printf "    forward . %s" (join " " $servers)) "}" -}}
{{- $blocks = append $blocks (join "\n" $b) -}}
{{- end -}}
{{- join "\n\n" $blocks -}}
{{- end -}}

{{/*
The directives the clusterdns binary knows, from files/directives.txt (generated from the plugin
registry, plugins/index.ts, by `npm run chart:directives`): a JSON list.
*/}}
{{- define "clusterdns.knownDirectives" -}}
{{- $known := list -}}
{{- range splitList "\n" (.Files.Get "files/directives.txt") -}}
{{- $l := trim . -}}
{{- if and $l (not (hasPrefix "#" $l)) -}}{{- $known = append $known $l -}}{{- end -}}
{{- end -}}
{{- if not $known -}}
{{- fail "files/directives.txt is missing or empty: regenerate it with `npm run chart:directives`" -}}
{{- end -}}
{{- toJson $known -}}
{{- end -}}

{{/*
Refuse, at template time, a Corefile the binary would reject at startup (the rollout would
crash-loop): a directive that is not in the plugin registry, a transport other than dns:// and
grpc://, or an extraConfig entry other than import.
*/}}
{{- define "clusterdns.checkCorefile" -}}
{{- $known := include "clusterdns.knownDirectives" . | fromJsonArray -}}
{{- $version := .Chart.AppVersion -}}
{{- range $i, $server := .Values.servers -}}
{{- range $j, $z := $server.zones -}}
{{- $scheme := lower (toString (default "" $z.scheme)) -}}
{{- $zone := toString (default "" $z.zone) -}}
{{- if and (contains "://" $zone) (not (hasPrefix "dns://" (lower $zone))) -}}
{{- $scheme = regexFind "^[^:]*://" (lower $zone) -}}
{{- end -}}
{{- if not (has $scheme (list "" "dns://" "grpc://")) -}}
{{- fail (printf "servers[%d].zones[%d]: transport %s is not supported by clusterdns %s, which serves plain DNS (dns://, over UDP and TCP) and DNS over gRPC (grpc://) only; the pods would exit at startup with this Corefile" $i $j $scheme $version) -}}
{{- end -}}
{{- end -}}
{{- range $j, $p := $server.plugins -}}
{{- $directive := first (splitList " " (trim (toString $p.name))) -}}
{{- if not (has $directive $known) -}}
{{- fail (printf "servers[%d].plugins[%d]: clusterdns %s has no plugin %q, so the pods would exit at startup with this Corefile. Known directives: %s (files/directives.txt)" $i $j $version $directive (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name, $conf := .Values.extraConfig -}}
{{- if ne $name "import" -}}
{{- fail (printf "extraConfig.%s: only import can stand outside a server block (clusterdns would read %q as a server block key)" $name $name) -}}
{{- end -}}
{{- end -}}
{{- range $i, $z := .Values.zoneFiles -}}
{{- if eq (toString $z.filename) "Corefile" -}}
{{- fail (printf "zoneFiles[%d].filename: Corefile is the ConfigMap key of the Corefile itself" $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* cluster-proportional-autoscaler: object name, labels and selector labels. */}}
{{- define "clusterdns.autoscalerName" -}}
{{- printf "%s-autoscaler" (include "clusterdns.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clusterdns.autoscalerSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-autoscaler" (include "clusterdns.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- if .Values.isClusterService }}
k8s-app: {{ printf "%s-autoscaler" (include "clusterdns.k8sapplabel" .) | trunc 63 | trimSuffix "-" | quote }}
{{- end }}
{{- end -}}

{{- define "clusterdns.autoscalerLabels" -}}
{{- $labels := merge (include "clusterdns.autoscalerSelectorLabels" . | fromYaml) (include "clusterdns.labels" . | fromYaml) -}}
{{- $_ := set $labels "app.kubernetes.io/component" "autoscaler" -}}
{{- toYaml $labels -}}
{{- end -}}

{{/* Whether the autoscaler objects are rendered: "true" or "". hpa.enabled takes precedence, as in the coredns chart. */}}
{{- define "clusterdns.autoscalerEnabled" -}}
{{- if and .Values.deployment.enabled .Values.autoscaler.enabled (not .Values.hpa.enabled) -}}true{{- end -}}
{{- end -}}

{{/*
The coredns chart's named templates, as aliases of ours, so values written for it that call them
through tpl (e.g. '{{ template "coredns.name" . }}' in topologySpreadConstraints) keep working.
*/}}
{{- define "coredns.name" -}}{{ include "clusterdns.name" . }}{{- end -}}
{{- define "coredns.fullname" -}}{{ include "clusterdns.fullname" . }}{{- end -}}
{{- define "coredns.labels" -}}{{ include "clusterdns.labels" . }}{{- end -}}
{{- define "coredns.labels.autoscaler" -}}{{ include "clusterdns.autoscalerLabels" . }}{{- end -}}
{{- define "coredns.k8sapplabel" -}}{{ include "clusterdns.k8sapplabel" . }}{{- end -}}
{{- define "coredns.servicePorts" -}}{{ include "clusterdns.servicePorts" . }}{{- end -}}
{{- define "coredns.containerPorts" -}}{{ include "clusterdns.containerPorts" . }}{{- end -}}
{{- define "coredns.serviceAccountName" -}}{{ include "clusterdns.serviceAccountName" . }}{{- end -}}
{{- define "coredns.clusterRoleName" -}}{{ include "clusterdns.clusterRoleName" . }}{{- end -}}
