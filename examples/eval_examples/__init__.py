"""The example agents, their evaluators and their offline behaviours: a project of its
own (examples/eval-pipeline.yaml lists this package under ``plugins``), kept outside the
``eval_pipeline`` package and written the way a team writes its own.

Importing the package registers what the project file names: the drive-thru evaluators
(``order_correctness``, ``tool_protocol``, the conversation evaluators, ...) and, for each
agent, the offline model's behaviour, recognised by the tools that agent binds.
"""

from eval_examples.drive_thru import conversation_evaluators, evaluators, offline_customer
from eval_examples.drive_thru import offline as drive_thru_offline
from eval_examples.order_management import offline as order_management_offline
from eval_examples.product_discovery import offline as product_discovery_offline
from eval_examples.research import offline as research_offline
from eval_pipeline.plugins import register_behaviour

# (aliased: the names drive_thru, research, … stay the subpackages', importable as such)
register_behaviour({"lookup_menu_item", "add_item_to_order"}, drive_thru_offline.respond)
register_behaviour({"search_products", "get_reviews"}, product_discovery_offline.respond)
register_behaviour({"get_order_status", "request_return"}, order_management_offline.respond)
register_behaviour({"CustomerReply"}, offline_customer.respond)
register_behaviour({"search"}, research_offline.respond)

__all__ = ["conversation_evaluators", "evaluators"]
