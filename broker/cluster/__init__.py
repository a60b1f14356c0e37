"""Who is alive and who leads what (docs/cluster.md): the ClusterView of each mode, and in cluster
mode the membership, leases and balancing that move leadership between brokers."""
