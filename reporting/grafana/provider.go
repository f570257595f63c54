package grafana

// DashboardProvider is Grafana's dashboard provisioning file for the
// generated dashboards (examples/grafana/provisioning/dashboards/vigil.yaml):
// it loads /var/lib/grafana/dashboards/vigil/*.json into the folder
// "vigil" and reloads them every 30 s. `vigil grafana` writes it beside
// the dashboards.
const DashboardProvider = `# Grafana dashboard provisioning: loads vigil's generated dashboards
# (the dashboards/*.json written beside it, mounted at /var/lib/grafana/dashboards/vigil)
# into the "vigil" folder and reloads them when the files change.
apiVersion: 1

providers:
  - name: vigil
    orgId: 1
    folder: vigil
    type: file
    disableDeletion: false
    allowUiUpdates: false
    updateIntervalSeconds: 30
    options:
      path: /var/lib/grafana/dashboards/vigil
      foldersFromFilesStructure: false
`
