"""AWS sites: EKS cluster and VPC, GPU node pools, EFA fabrics, storage tiers."""
