"""S3: `s3://bucket/key` data paths, run directories mirrored to `--runs s3://...`
(and resumed from there on another machine), through boto3's standard credential
chain; AWS_ENDPOINT_URL names an S3-compatible store (docs/environment.md, "S3")."""
