from eval_pipeline.cli import main

main()
