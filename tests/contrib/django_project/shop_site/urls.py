"""URLs of the example shop."""

from django.urls import path
from shop import views

urlpatterns = [
    path("orders", views.create_order),
    path("reports", views.create_report),
    path("tasks/<str:name>", views.enqueue_task),
    path("results/<str:result_id>", views.task_result),
    path("async-results/<str:result_id>", views.async_task_result),
]
