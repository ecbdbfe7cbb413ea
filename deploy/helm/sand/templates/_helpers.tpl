{{/* Names and labels of the SAND chart. */}}

{{- define "sand.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sand.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sand.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "sand.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include "sand.selector" (list . "host-agent") */}}
{{- define "sand.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "sand.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "sand.image" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}

{{- define "sand.redisSecret" -}}
{{- default (printf "%s-redis" (include "sand.fullname" .)) .Values.redis.existingSecret -}}
{{- end -}}

{{/* Kafka bootstrap servers: the Strimzi cluster's bootstrap Service, or the configured ones. */}}
{{- define "sand.kafkaBootstrap" -}}
{{- if .Values.kafka.strimzi.enabled -}}
{{- printf "%s-kafka-bootstrap.%s.svc:9092" .Values.kafka.strimzi.name .Release.Namespace -}}
{{- else -}}
{{- .Values.kafka.bootstrap -}}
{{- end -}}
{{- end -}}

{{/* One Cassandra contact point: the K8ssandra datacenter's Service, or the configured one. */}}
{{- define "sand.cassandraContactPoint" -}}
{{- if .Values.cassandra.k8ssandra.enabled -}}
{{- printf "%s-%s-service.%s.svc:9042" .Values.cassandra.k8ssandra.name .Values.cassandra.datacenter .Release.Namespace -}}
{{- else -}}
{{- .Values.cassandra.contactPoint -}}
{{- end -}}
{{- end -}}

{{/* Paths on the node (and, identically, in the pods). */}}
{{- define "sand.stateDir" -}}{{ .Values.hostDir }}/state{{- end -}}
{{- define "sand.redisDir" -}}{{ .Values.hostDir }}/state/run/redis{{- end -}}
{{- define "sand.libDir" -}}{{ .Values.hostDir }}/lib{{- end -}}
{{- define "sand.dockerSocket" -}}
{{- if eq .Values.docker.mode "dind" -}}
{{ .Values.hostDir }}/run/docker/docker.sock
{{- else -}}
{{ .Values.docker.socket }}
{{- end -}}
{{- end -}}

{{/* Pod scheduling shared by the agent and the frontends. */}}
{{- define "sand.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- end -}}
