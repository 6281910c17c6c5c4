from flipgate.cli import main

main()
