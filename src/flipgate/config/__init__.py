"""What the user keeps in the repository: .flipgate.yml and the cases, read and validated."""
